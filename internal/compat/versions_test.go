package compat

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestCheckDataFormat_RefusesWhatItCannotRead(t *testing.T) {
	if err := CheckDataFormat("d", DataFormat); err != nil {
		t.Fatalf("own format refused: %v", err)
	}
	if err := CheckDataFormat("d", MinDataFormat); err != nil {
		t.Fatalf("oldest readable format refused: %v", err)
	}
	for _, c := range []struct {
		format int
		want   string
	}{
		{0, "older build"}, {MinDataFormat - 1, "older build"}, {DataFormat + 1, "newer build"},
	} {
		err := CheckDataFormat("/srv/d", c.format)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/srv/d") {
			t.Errorf("format %d: %v, want an error naming the dir and saying %q", c.format, err, c.want)
		}
	}
}

func TestCompatible_RangesMeet(t *testing.T) {
	for _, c := range []struct {
		lo, hi int
		want   bool
	}{
		{Protocol, Protocol, true},
		{MinProtocol, MinProtocol, true},
		{MinProtocol - 1, Protocol + 1, true}, // a wider peer
		{Protocol + 1, Protocol + 2, false},   // a peer two releases ahead
		{0, MinProtocol - 1, false},           // too old
		{Protocol, Protocol - 1, false},       // an empty range
	} {
		if got := Compatible(c.lo, c.hi); got != c.want {
			t.Errorf("Compatible(%d, %d) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestClusterProtocol_IsTheLowestMember(t *testing.T) {
	if got := ClusterProtocol(nil); got != Protocol {
		t.Errorf("no members: %d, want %d", got, Protocol)
	}
	if got := ClusterProtocol([]int{Protocol, 0, Protocol}); got != 1 {
		t.Errorf("a member that does not say: %d, want 1", got)
	}
	if got := ClusterProtocol([]int{Protocol + 3}); got != Protocol {
		t.Errorf("newer members: %d, want this build's %d", got, Protocol)
	}
}

func TestBuildName_NamesVersionAndCommit(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0024cc1b4e2a99aa00bb"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got := buildName(bi, true); got != "(devel) 0024cc1b4e2a+dirty" {
		t.Errorf("buildName = %q", got)
	}
	if got := buildName(nil, false); got != "unknown" {
		t.Errorf("no build info: %q", got)
	}
	if got := buildName(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, true); got != "v1.2.0" {
		t.Errorf("no vcs stamp: %q", got)
	}
}

func TestRequire_RefusesUntilTheClusterSpeaksIt(t *testing.T) {
	if err := Require(nil, Protocol, "x"); err != nil {
		t.Fatalf("no cluster protocol: %v", err)
	}
	err := Require(func() int { return 1 }, 2, "widgets")
	if e, ok := errors.AsType[*errs.Error](err); !ok || e.Code != errs.UpgradeInProgress || !e.Retryable || !strings.Contains(e.Message, "widgets") {
		t.Fatalf("cluster at 1, need 2: %v, want a retryable upgrade_in_progress naming the feature", err)
	}
	if err := Require(func() int { return 2 }, 2, "widgets"); err != nil {
		t.Fatalf("cluster at 2: %v", err)
	}
}

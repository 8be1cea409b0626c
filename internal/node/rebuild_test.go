package node

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/config"
)

// A start after one that set a quarantined (or stale) directory aside but never
// joined is a rebuild too: with the set-aside copy there and no node
// record, the node joins under its id and, being the --initial-node, does
// not create a cluster on the emptied directory. Without --join, or with a
// record, nothing changes.
func TestNode_ResumeRebuild(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, quarantinedPrefix+"20261128T100000.000Z"), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		join   []string
		record bool
		want   bool
	}{{[]string{"n2:7071"}, false, true}, {nil, false, false}, {[]string{"n2:7071"}, true, false}} {
		n := &Node{cfg: config.Config{ID: "n1", InitialNode: "n1", DataDir: dir, Join: tc.join}, log: slog.New(slog.DiscardHandler)}
		if tc.record {
			n.rec.Store(&nodeRecord{ID: "n1"})
		}
		n.resumeRebuild()
		if n.rebuilding != tc.want {
			t.Errorf("join %v, record %v: rebuilding %v, want %v", tc.join, tc.record, n.rebuilding, tc.want)
		}
	}
	stale := t.TempDir()
	if err := os.Mkdir(filepath.Join(stale, stalePrefix+"20261128T100000.000Z"), 0o750); err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: config.Config{ID: "n1", DataDir: stale, Join: []string{"n2:7071"}}, log: slog.New(slog.DiscardHandler)}
	if n.resumeRebuild(); !n.rebuilding {
		t.Error("a data dir holding a stale-* set-aside copy and no record was not taken for a rebuild")
	}
	empty := &Node{cfg: config.Config{ID: "n1", DataDir: t.TempDir(), Join: []string{"n2:7071"}}, log: slog.New(slog.DiscardHandler)}
	if empty.resumeRebuild(); empty.rebuilding {
		t.Error("an empty data dir without a set-aside copy was taken for a rebuild")
	}
}

// A start on a data dir that holds copies set aside by earlier rebuilds
// warns, naming them and the disk they use; one without says nothing.
func TestNode_WarnSetAside(t *testing.T) {
	dir := t.TempDir()
	aside := filepath.Join(dir, stalePrefix+"20261128T100000.000Z")
	if err := os.MkdirAll(filepath.Join(aside, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"000001.log": 700, "sub/000002.sst": 300} {
		if err := os.WriteFile(filepath.Join(aside, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	n := &Node{cfg: config.Config{ID: "n1", DataDir: dir}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	n.warnSetAside()
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, aside) || !strings.Contains(out, "bytes=1000") {
		t.Fatalf("log %q: want a warning naming %s and its 1000 bytes", out, aside)
	}
	logs.Reset()
	empty := &Node{cfg: config.Config{ID: "n1", DataDir: t.TempDir()}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	if empty.warnSetAside(); logs.Len() != 0 {
		t.Fatalf("a data dir without set-aside copies logged %q", logs.String())
	}
}

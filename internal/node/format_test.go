package node

import (
	"strings"
	"testing"
)

// A data directory is read only in the format this build writes; an older
// or newer one is refused with a message saying what to do, never misread.
func TestCheckFormat(t *testing.T) {
	if err := checkFormat("d", DataFormat); err != nil {
		t.Fatalf("this build's own format refused: %v", err)
	}
	for _, c := range []struct {
		format int
		want   string
	}{
		{0, "older build"}, {DataFormat - 1, "older build"}, {DataFormat + 1, "newer build"},
	} {
		err := checkFormat("d", c.format)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "data dir d") {
			t.Errorf("format %d: %v, want a refusal naming the dir and %q", c.format, err, c.want)
		}
	}
}

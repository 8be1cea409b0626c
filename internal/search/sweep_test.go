package search

import (
	"fmt"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// An indexer's sweep reads the replica only when it applied something since
// the last sweep, and what a sweep is for (retention, a deleted room) is
// still found by the next one.
func TestSweep_OnlyWhenApplied(t *testing.T) {
	w := newWorld(t, 1)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "short"}, ""))(t)
	for i := range 6 {
		must(w.s.Post(ctx, "ann", "short", fmt.Sprintf("keepsake number%d", i), nil, ""))(t)
	}
	r, err := newReplica(1, 0, w.x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.idx.Close()
	sweep := func(step string, want bool, indexed uint64) {
		t.Helper()
		_, before := w.r.Calls()
		swept, err := r.sweepIfApplied(ctx)
		_, after := w.r.Calls()
		if err != nil || swept != want || (after > before) != want {
			t.Fatalf("%s: swept %v (%d reads), %v; want swept %v", step, swept, after-before, err, want)
		}
		if n := must(r.idx.Count())(t); n != indexed {
			t.Fatalf("%s: %d messages indexed, want %d", step, n, indexed)
		}
	}
	sweep("first", true, 6)
	sweep("nothing applied", false, 6)
	keep := int64(2)
	must(w.s.UpdateSettings(ctx, "ann", "short", chat.SettingsRequest{RetentionMessages: &keep}, false, ""))(t)
	if res := must(w.s.Compact(ctx, 1, 0, 0))(t); res.Deleted == 0 {
		t.Fatal("compaction removed nothing")
	}
	sweep("after retention", true, 2)
	sweep("nothing applied again", false, 2)
	if err := w.s.Delete(ctx, "ann", "short", false, ""); err != nil {
		t.Fatal(err)
	}
	sweep("after the room's deletion", true, 0)
}

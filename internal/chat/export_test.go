package chat_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// exportAll runs an export and returns its pages.
func exportAll(t testing.TB, s *chat.Service, user, room string, admin bool) ([][]chat.Event, error) {
	t.Helper()
	var pages [][]chat.Event
	err := s.Export(ctx, user, room, admin, func(evs []chat.Event) error {
		pages = append(pages, slices.Clone(evs))
		return nil
	})
	return pages, err
}

func TestService_Export(t *testing.T) {
	s, r := newService(t, 2)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "Big"})
	mustJoin(t, s, "bob", "big", "")
	mustJoin(t, s, "carol", "big", "")
	const posts = 2*chat.ExportPage + 7
	for i := range posts {
		mustPost(t, s, "bob", "big", "hello")
		if i == 3 {
			mustPost(t, s, "bob", "big", "psst", "carol") // a whisper alice is not part of
		}
	}
	last := uint64(3 + posts + 1)

	t.Run("owner: every event once, in seq order, in pages", func(t *testing.T) {
		pages, err := exportAll(t, s, "ALICE", "BIG", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(pages) != 3 || len(pages[0]) != chat.ExportPage {
			t.Fatalf("%d pages, the first of %d events", len(pages), len(pages[0]))
		}
		var seqs []uint64
		for _, p := range pages {
			for _, e := range p {
				seqs = append(seqs, e.Seq)
				if e.Room != "big" {
					t.Fatalf("event of room %q", e.Room)
				}
				if e.Seq == 8 && (e.Kind != chat.KindHidden || e.Text != "") {
					t.Fatalf("the owner's export shows another's whisper: %+v", e)
				}
			}
		}
		if uint64(len(seqs)) != last || seqs[0] != 1 || seqs[len(seqs)-1] != last || !slices.IsSorted(seqs) {
			t.Fatalf("exported %d seqs, %v...%v", len(seqs), seqs[:3], seqs[len(seqs)-3:])
		}
	})
	t.Run("admin may, members and others may not", func(t *testing.T) {
		if _, err := exportAll(t, s, "dave", "big", true); err != nil {
			t.Fatalf("admin export: %v", err)
		}
		for _, u := range []string{"bob", "dave"} {
			pages, err := exportAll(t, s, u, "big", false)
			wantCode(t, err, errs.Forbidden)
			if len(pages) != 0 {
				t.Fatalf("%s got %d pages before the refusal", u, len(pages))
			}
		}
		_, err := exportAll(t, s, "alice", "nonesuch", false)
		wantCode(t, err, errs.NotFound)
		_, err = exportAll(t, s, "", "big", false)
		wantCode(t, err, errs.Unauthorized)
	})
	t.Run("stops at the last event when it began", func(t *testing.T) {
		n := 0
		err := s.Export(ctx, "alice", "big", false, func(evs []chat.Event) error {
			n += len(evs)
			mustPost(t, s, "bob", "big", "later") // after the export began
			return nil
		})
		if err != nil || uint64(n) != last {
			t.Fatalf("exported %d events (%v), want %d", n, err, last)
		}
	})
	t.Run("an error of emit ends it", func(t *testing.T) {
		stop := errors.New("client gone")
		calls := 0
		err := s.Export(ctx, "alice", "big", false, func([]chat.Event) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("Export = %v after %d calls", err, calls)
		}
	})
	t.Run("a room whose history is gone: one empty page", func(t *testing.T) {
		mustCreate(t, s, "alice", chat.CreateRequest{Name: "gone"})
		mustPost(t, s, "bob", "big", "the clock moves on")
		mustPost(t, s, "bob", "big", "and on")
		if _, err := s.Compact(ctx, r.PartitionOf("gone"), time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		pages, err := exportAll(t, s, "alice", "gone", false)
		if err != nil || len(pages) != 1 || len(pages[0]) != 0 {
			t.Fatalf("pages %v, %v", pages, err)
		}
	})
}

package chat

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// ExportPage is how many events one read of an export takes: an export
// holds at most one page in memory, however long the history.
const ExportPage = 500

// Export sends a room's whole history to emit, page by page in seq order:
// every event from the first retained one to the last one when the export
// began, as user may see them (whispers user is not part of are hidden
// events, see Event.ViewFor: an export shows its reader no more than the
// history does). Only the room's owner or, with isAdmin, an administrator
// may export (errs.Forbidden); a missing room is errs.NotFound.
//
// Each page is its own linearizable read, so a long export never holds one
// read open; events that retention removes while the export runs are
// skipped, and a room deleted meanwhile ends it with errs.NotFound. When the
// caller may export, emit is called at least once (with no events for a
// room whose history is all gone), so the first call is the place to start
// an answer; an error of emit ends the export and is returned.
func (s *Service) Export(ctx context.Context, user, room string, isAdmin bool, emit func([]Event) error) error {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return err
	}
	p := s.r.PartitionOf(room)
	var after, end uint64
	for first := true; ; first = false {
		var page []Event
		if _, err := s.r.Read(ctx, p, false, func(r state.Reader) (err error) {
			page, end, err = exportPage(r, room, user, isAdmin, after, end, first)
			return err
		}); err != nil {
			return fmt.Errorf("chat: export %q: %w", room, err)
		}
		if len(page) == 0 && !first {
			return nil
		}
		if err := emit(page); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		after = page[len(page)-1].Seq
		if after >= end {
			return nil
		}
	}
}

// exportPage reads the next page of an export of room by user: up to
// ExportPage events after after and up to end, the room's last seq when the
// export began (first: now, returned as the new end). It checks that user
// may export the room.
func exportPage(r state.Reader, room, user string, isAdmin bool, after, end uint64, first bool) ([]Event, uint64, error) {
	rec, err := liveRoom(r, room)
	if err != nil {
		return nil, 0, err
	}
	if !isAdmin && !ident.EqualFold(rec.owner, user) {
		return nil, 0, errs.New(errs.Forbidden, "only the owner of room %q or an admin may export it", room)
	}
	if first {
		end = rec.lastSeq
	}
	lo := max(after+1, rec.firstRetained)
	if lo > end {
		return []Event{}, end, nil
	}
	events, err := scanEvents(r, room, lo, end+1, ExportPage)
	if err != nil {
		return nil, 0, err
	}
	for i := range events {
		events[i] = events[i].ViewFor(user)
	}
	return events, end, nil
}

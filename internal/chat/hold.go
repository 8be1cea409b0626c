package chat

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// opLegalHold is the operation byte of LegalHold, new at
// RetentionProtocol.
const opLegalHold byte = 'L'

// LegalHold places Room under legal hold (or, with Lift, lifts it) on
// behalf of User, who must be an administrator (Admin). While a room is
// held nothing of its history is deleted: neither the cluster's nor the
// room's retention removes events, its messages cannot be edited or
// deleted (an edit replaces the only copy of a text), and the room cannot
// be deleted. Placing a hold on a held room, or lifting one from a room
// not held, changes nothing.
//
// Encoding: Tag, 'L', flags (admin, lift), Room, User.
type LegalHold struct {
	Room, User  string
	Admin, Lift bool
}

func (LegalHold) isCommand() {}

// EncodeLegalHold returns the binary encoding of c.
func EncodeLegalHold(c LegalHold) []byte {
	b := append(make([]byte, 0, 8+len(c.Room)+len(c.User)), Tag, opLegalHold, modFlags(c.Admin, c.Lift))
	return wire.AppendString(wire.AppendString(b, c.Room), c.User)
}

func applyLegalHold(w state.Writer, meta state.Meta, c LegalHold) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	if !c.Admin {
		return refuse(statusForbidden, "only an admin may place or lift a legal hold on room %q", c.Room), nil
	}
	if rec.settings.legalHold != c.Lift {
		return encodeOK(okResult{op: opLegalHold, user: c.User, room: c.Room, rec: rec}), nil // already so
	}
	rec.settings.legalHold = !c.Lift
	kind := evHold
	if c.Lift {
		kind = evUnhold
	}
	return appendModeration(w, meta, c.Room, rec, &eventRecord{kind: kind, sender: c.User}, opLegalHold)
}

// holdRule refuses to change or delete history in a room under legal
// hold; what says what was refused.
func holdRule(room string, rec *roomRecord, what string) []byte {
	if !rec.settings.legalHold {
		return nil
	}
	return refuse(statusConflict, "room %q is under legal hold: %s until an admin lifts it", room, what)
}

// SetLegalHold places room under legal hold (lift: lifts it) and returns
// the room. Only administrators may (isAdmin; errs.Forbidden otherwise).
func (s *Service) SetLegalHold(ctx context.Context, user, room string, lift, isAdmin bool, idempotencyKey string) (Room, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return Room{}, err
	}
	if !isAdmin {
		return Room{}, errs.New(errs.Forbidden, "only an admin may place or lift a legal hold")
	}
	if err := compat.Require(s.cfg.ClusterProtocol, RetentionProtocol, "legal holds"); err != nil {
		return Room{}, err
	}
	res, err := s.propose(ctx, room, dk, EncodeLegalHold(LegalHold{Room: room, User: user, Admin: isAdmin, Lift: lift}))
	if err != nil {
		return Room{}, fmt.Errorf("chat: legal hold of %q: %w", room, err)
	}
	return *res.Room, nil
}

package chat

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// roleNames name the role byte of role events.
var roleNames = map[byte]string{0: RoleMember, 1: RoleModerator, 2: RoleOwner}

// moderationView fills in a moderation event's public fields from its
// record: the reason moves from Text to Reason.
func (ev *Event) moderationView(e *eventRecord) {
	ev.Text, ev.Reason, ev.Until = "", e.text, e.until
	if e.kind == evSettings {
		if e.arg != "" {
			ev.Changed = strings.Split(e.arg, ",")
		}
		return
	}
	ev.User = e.arg
	if e.kind == evRole {
		ev.Role = roleNames[e.role]
	}
}

// Sanction is a ban, mute or invitation in force in a room.
type Sanction struct {
	User string `json:"user"`
	// By is the moderator who imposed it, At when (Unix ms).
	By string `json:"by"`
	At int64  `json:"at"`
	// Until is when a ban or mute ends (Unix ms); 0 is never.
	Until  int64  `json:"until,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ModerationLog is what a room's moderators see at GET
// /api/v1/rooms/{room}/moderation: the bans and mutes in force, the open
// invitations, and the latest moderation events (role changes, invitations,
// kicks, bans, mutes, settings), oldest first.
type ModerationLog struct {
	Bans    []Sanction `json:"bans"`
	Mutes   []Sanction `json:"mutes"`
	Invites []Sanction `json:"invites"`
	Events  []Event    `json:"events"`
}

// ModerationEvents is how many of the latest moderation events
// ModerationLog lists.
const ModerationEvents = 200

// Moderation returns room's moderation log for user, who must be its
// owner, a moderator or (admin) an administrator (errs.Forbidden
// otherwise); bans and mutes that ended by now (Unix ms) are left out.
func Moderation(r state.Reader, room, user string, admin bool, now int64) (ModerationLog, error) {
	rec, err := liveRoom(r, room)
	if err != nil {
		return ModerationLog{}, err
	}
	a, err := actorOf(r, room, rec, user, admin)
	if err != nil {
		return ModerationLog{}, err
	}
	if a.level < levelModerator {
		return ModerationLog{}, errs.New(errs.Forbidden, "only the owner, a moderator or an admin of room %q may read its moderation log", room)
	}
	out := ModerationLog{Bans: []Sanction{}, Mutes: []Sanction{}, Invites: []Sanction{}}
	for _, l := range []struct {
		kind byte
		to   *[]Sanction
	}{{banPrefix, &out.Bans}, {mutePrefix, &out.Mutes}, {invitePrefix, &out.Invites}} {
		all, err := scanSanctions(r, room, l.kind)
		if err != nil {
			return ModerationLog{}, err
		}
		for _, s := range all {
			if l.kind == invitePrefix || s.activeAt(now) {
				*l.to = append(*l.to, Sanction{User: s.name, By: s.actor, At: s.at, Until: s.until, Reason: s.reason})
			}
		}
	}
	seqs, err := latestLogSeqs(r, room, rec.firstRetained)
	if err != nil {
		return ModerationLog{}, err
	}
	if out.Events, err = eventsAt(r, room, rec, user, seqs); err != nil {
		return ModerationLog{}, err
	}
	return out, nil
}

// latestLogSeqs returns the seqs of the latest ModerationEvents moderation
// events of room at or after first, in seq order.
func latestLogSeqs(r state.Reader, room string, first uint64) ([]uint64, error) {
	lo := sanctionPrefix(room, logPrefix)
	var seqs []uint64
	var bad []byte
	err := r.Scan(logKey(room, first), state.PrefixEnd(lo), func(k, _ []byte) bool {
		if len(k) != len(lo)+8 {
			bad = append([]byte(nil), k...)
			return false
		}
		seqs = append(seqs, binary.BigEndian.Uint64(k[len(lo):]))
		if len(seqs) > 2*ModerationEvents {
			seqs = append(seqs[:0], seqs[len(seqs)-ModerationEvents:]...)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("chat: scan the moderation log of %q: %w", room, err)
	}
	if bad != nil {
		return nil, fmt.Errorf("chat: corrupt moderation log key %q", bad)
	}
	return seqs[max(len(seqs)-ModerationEvents, 0):], nil
}

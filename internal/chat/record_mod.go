package chat

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Keys of room roles and moderation, relative to the partition, beside
// those of record.go:
//
//	c/<room>/b/<user>   ban: who, when, until (0: for good), why
//	c/<room>/u/<user>   mute: who, when, until, why
//	c/<room>/i/<user>   invitation: who, when
//	c/<room>/a/<seq>    seq is a moderation event (the moderation log)
//
// <user> is the lower-cased username. Roles live in member records and the
// room record (its owner); settings in the room record.
const (
	banPrefix    byte = 'b'
	mutePrefix   byte = 'u'
	invitePrefix byte = 'i'
	logPrefix    byte = 'a'
)

// sanctionPrefix returns c/<room>/<kind>/.
func sanctionPrefix(room string, kind byte) []byte {
	return append(roomKeyBuf(room, 2), kind, '/')
}

// sanctionKey returns c/<room>/<kind>/<folded user>.
func sanctionKey(room string, kind byte, user string) []byte {
	return ident.AppendFold(append(roomKeyBuf(room, 2+len(user)), kind, '/'), user)
}

// logKey returns the key marking seq a moderation event of room.
func logKey(room string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(sanctionPrefix(room, logPrefix), seq)
}

// Member roles, stored in the member record. The owner is the room
// record's owner, whatever their member record says.
const (
	roleMember    byte = 0
	roleModerator byte = 1
)

// Role names, as the API and events spell them.
const (
	RoleOwner     = "owner"
	RoleModerator = "moderator"
	RoleMember    = "member"
)

// roomSettings are a room's topic, description and posting rules. Whether
// the room is invitation-only is not a setting: it is a private room with no
// password.
type roomSettings struct {
	topic, description string
	// announcement lets only moderators and the owner post.
	announcement bool
	// slowModeSec is the least time between two posts of one member, in
	// seconds; 0 is off. Moderators and the owner are exempt.
	slowModeSec uint64
	// retention is the room's own retention (retention.go); the zero value
	// follows the cluster default.
	retention roomRetention
	// legalHold suspends every deletion of the room's history: retention,
	// deleting messages, editing them and deleting the room.
	legalHold bool
}

// Flags of the settings tail. setRetention and setLegalHold are new at
// RetentionProtocol; a room without them is stored as before.
const (
	setAnnouncement byte = 1 << 0
	setRetention    byte = 1 << 1 // the retention fields follow the description
	setLegalHold    byte = 1 << 2
	setFlags             = setAnnouncement | setRetention | setLegalHold
)

func (s roomSettings) size() int {
	return 2 + 7*binary.MaxVarintLen64 + len(s.topic) + len(s.description)
}

// appendSettings appends flags (announcement, retention, legal hold),
// uvarint slowModeSec, topic, description and, with setRetention, the
// retention (appendRetention).
func appendSettings(b []byte, s roomSettings) []byte {
	var flags byte
	if s.announcement {
		flags |= setAnnouncement
	}
	if s.retention != (roomRetention{}) {
		flags |= setRetention
	}
	if s.legalHold {
		flags |= setLegalHold
	}
	b = binary.AppendUvarint(append(b, flags), s.slowModeSec)
	b = wire.AppendString(wire.AppendString(b, s.topic), s.description)
	if flags&setRetention != 0 {
		b = appendRetention(b, s.retention)
	}
	return b
}

// settings reads what appendSettings wrote.
func (d *decoder) settings() roomSettings {
	flags := d.flags(setFlags)
	s := roomSettings{announcement: flags&setAnnouncement != 0, slowModeSec: d.uvarint(), topic: d.str(), description: d.str(),
		legalHold: flags&setLegalHold != 0}
	if flags&setRetention != 0 {
		s.retention = d.retention()
	}
	return s
}

// sanction is a ban, mute or invitation of one user.
type sanction struct {
	name  string // the username as the actor spelled it
	actor string
	at    int64 // when it was imposed (Unix ms)
	// until is when a ban or mute ends (Unix ms); 0 is never.
	until  int64
	reason string
}

// activeAt reports whether a ban or mute is in force at time now.
func (s sanction) activeAt(now int64) bool { return s.until == 0 || now < s.until }

// encodeSanction returns version, varint at, varint until, name, actor,
// reason.
func encodeSanction(s sanction) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+3*binary.MaxVarintLen64+len(s.name)+len(s.actor)+len(s.reason))
	b = append(b, recordVersion)
	b = binary.AppendVarint(binary.AppendVarint(b, s.at), s.until)
	return wire.AppendString(wire.AppendString(wire.AppendString(b, s.name), s.actor), s.reason)
}

func decodeSanction(k, v []byte) (sanction, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	s := sanction{at: d.varint(), until: d.varint(), name: d.name(), actor: d.name(), reason: d.str()}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return sanction{}, fmt.Errorf("chat: corrupt record under %q: %w", k, d.err)
	}
	return s, nil
}

// getSanction reads user's ban, mute or invitation (kind) in room.
func getSanction(r state.Reader, room string, kind byte, user string) (sanction, bool, error) {
	k := sanctionKey(room, kind, user)
	v, found, err := r.Get(k)
	if err != nil {
		return sanction{}, false, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return sanction{}, false, nil
	}
	s, err := decodeSanction(k, v)
	return s, err == nil, err
}

// activeSanction reads user's ban or mute in room and reports whether it is
// in force at now.
func activeSanction(r state.Reader, room string, kind byte, user string, now int64) (sanction, bool, error) {
	s, found, err := getSanction(r, room, kind, user)
	return s, found && s.activeAt(now), err
}

func setSanction(w state.Writer, room string, kind byte, s sanction) error {
	k := sanctionKey(room, kind, s.name)
	if err := w.Set(k, encodeSanction(s)); err != nil {
		return fmt.Errorf("chat: write %q: %w", k, err)
	}
	return nil
}

func deleteKey(w state.Writer, k []byte) error {
	if err := w.Delete(k); err != nil {
		return fmt.Errorf("chat: delete %q: %w", k, err)
	}
	return nil
}

// scanSanctions returns every record of kind in room, in key order.
func scanSanctions(r state.Reader, room string, kind byte) ([]sanction, error) {
	var out []sanction
	var err error
	lo := sanctionPrefix(room, kind)
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var s sanction
		if s, err = decodeSanction(k, v); err != nil {
			return false
		}
		out = append(out, s)
		return true
	})
	if scanErr != nil {
		return nil, fmt.Errorf("chat: scan %q: %w", lo, scanErr)
	}
	return out, err
}

package chat

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/wire"
)

// Key layout, relative to the partition (see the package documentation):
//
//	c/<room>/r                 room record
//	c/<room>/m/<user>          member record; <user> is the lower-cased username
//	c/<room>/e/<seq>           event; <seq> is 8 bytes big endian
//	c/<room>/t/<root><seq>     reply seq in the thread of root
//	c/<room>/p/<seq>           seq is pinned
//	c/<room>/n/<user>/<seq>    seq mentions user (<user> "@room": everyone)
//	c/@<user>/...              user's mention inbox, stored as a room
//	c/<room>/f/<id>, F/<id><i>, q  files, their chunks, the room's usage (files.go)
//
// Room names never contain '/', so "c/<room>/" is a prefix of exactly that
// room's keys, and the rooms of a partition are found by skipping from one
// room prefix to the next.
const (
	keyPrefix = "c/"
	// roomsEnd is the first key after every chat key.
	roomsEnd = "c0"
)

// roomKeyBuf returns "c/<room>/" with room for extra more bytes.
func roomKeyBuf(room string, extra int) []byte {
	b := make([]byte, 0, len(keyPrefix)+len(room)+1+extra)
	return append(append(append(b, keyPrefix...), room...), '/')
}

// roomPrefix returns "c/<room>/".
func roomPrefix(room string) []byte { return roomKeyBuf(room, 0) }

// roomKey returns the key of room's record.
func roomKey(room string) []byte { return append(roomKeyBuf(room, 1), 'r') }

// membersPrefix returns the prefix of room's member keys.
func membersPrefix(room string) []byte { return append(roomKeyBuf(room, 2), 'm', '/') }

// memberKey returns the key of user's membership of room.
func memberKey(room, user string) []byte {
	return ident.AppendFold(append(roomKeyBuf(room, 2+len(user)), 'm', '/'), user)
}

// eventsPrefix returns the prefix of room's event keys.
func eventsPrefix(room string) []byte { return append(roomKeyBuf(room, 2), 'e', '/') }

// eventKey returns the key of room's event seq.
func eventKey(room string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(roomKeyBuf(room, 10), 'e', '/'), seq)
}

// threadKey returns the key marking seq as a reply in the thread of root:
// c/<room>/t/<root><seq>, both 8 bytes big endian.
func threadKey(room string, root, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(threadPrefix(room, root), seq)
}

// threadPrefix returns the prefix of the thread of root's keys.
func threadPrefix(room string, root uint64) []byte {
	return binary.BigEndian.AppendUint64(append(roomKeyBuf(room, 18), 't', '/'), root)
}

// pinKey returns the key marking seq pinned: c/<room>/p/<seq>.
func pinKey(room string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(pinsPrefix(room), seq)
}

// pinsPrefix returns the prefix of room's pin keys.
func pinsPrefix(room string) []byte { return append(roomKeyBuf(room, 10), 'p', '/') }

// roomWide is the mention key "user" of @room: every member is mentioned.
// '@' is no username byte, so it names no user.
const roomWide = "@room"

// mentionKey returns the key marking that message seq mentions user (or
// every member, for roomWide): c/<room>/n/<folded user>/<seq>.
func mentionKey(room, user string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(mentionsPrefix(room, user), seq)
}

// mentionsPrefix returns the prefix of user's mention keys in room.
func mentionsPrefix(room, user string) []byte {
	b := ident.AppendFold(append(roomKeyBuf(room, 11+len(user)), 'n', '/'), user)
	return append(b, '/')
}

// InboxName returns the name of user's mention inbox: "@" and the folded
// username. It is stored like a room (c/@user/...) in the partition that
// owns that name, and no room can have it ('@' is not allowed in room names).
func InboxName(user string) string { return "@" + ident.Fold(user) }

// isInbox reports whether a name from the chat key range is a mention
// inbox rather than a room.
func isInbox(name string) bool { return len(name) > 0 && name[0] == '@' }

// roomOfKey returns the room whose prefix starts the chat key k.
func roomOfKey(k []byte) (string, bool) {
	if len(k) <= len(keyPrefix) || string(k[:len(keyPrefix)]) != keyPrefix {
		return "", false
	}
	rest := k[len(keyPrefix):]
	for i, c := range rest {
		if c == '/' {
			return string(rest[:i]), i > 0
		}
	}
	return "", false
}

// Room record flags.
const (
	recPrivate byte = 1 << 0
	recDeleted byte = 1 << 1
	// recSettings says the room's settings (record_mod.go) follow the
	// password hash. A room that never changed them is stored without,
	// exactly as before settings existed.
	recSettings byte = 1 << 2
	recFlags         = recPrivate | recDeleted | recSettings
)

// recordVersion is the first byte of every stored record, so the format can
// change without misreading old records.
const recordVersion byte = 1

// roomRecord is a room's stored state.
type roomRecord struct {
	owner        string
	private      bool
	deleted      bool
	passwordHash string
	maxMembers   uint64
	members      uint64 // current number of members
	createdAt    int64  // Unix ms
	lastSeq      uint64 // seq of the room's latest event; 0 before the first
	lastTs       int64  // time of the latest event, so times never go back
	// firstRetained is the lowest seq History may return: 1 until
	// compaction or deletion removes events. Events below it may still be
	// stored until Compact purges them; reads never return them.
	firstRetained uint64
	// settings are the room's topic, description and posting rules; the
	// zero value for a room that never set them.
	settings roomSettings
}

// encodeRoom returns the stored form of rec: version, flags, uvarint
// maxMembers, uvarint members, varint createdAt, uvarint lastSeq, varint
// lastTs, uvarint firstRetained, owner, passwordHash and, with recSettings,
// the settings (appendSettings).
func encodeRoom(rec *roomRecord) []byte {
	var flags byte
	if rec.private {
		flags |= recPrivate
	}
	if rec.deleted {
		flags |= recDeleted
	}
	if rec.settings != (roomSettings{}) {
		flags |= recSettings
	}
	b := make([]byte, 0, 2+8*binary.MaxVarintLen64+len(rec.owner)+len(rec.passwordHash)+rec.settings.size())
	b = append(b, recordVersion, flags)
	b = binary.AppendUvarint(b, rec.maxMembers)
	b = binary.AppendUvarint(b, rec.members)
	b = binary.AppendVarint(b, rec.createdAt)
	b = binary.AppendUvarint(b, rec.lastSeq)
	b = binary.AppendVarint(b, rec.lastTs)
	b = binary.AppendUvarint(b, rec.firstRetained)
	b = wire.AppendString(b, rec.owner)
	b = wire.AppendString(b, rec.passwordHash)
	if flags&recSettings != 0 {
		b = appendSettings(b, rec.settings)
	}
	return b
}

// decodeRoom decodes the room record stored under k.
func decodeRoom(k, v []byte) (*roomRecord, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	flags := d.flags(recFlags)
	rec := &roomRecord{
		private:       flags&recPrivate != 0,
		deleted:       flags&recDeleted != 0,
		maxMembers:    d.uvarint(),
		members:       d.uvarint(),
		createdAt:     d.varint(),
		lastSeq:       d.uvarint(),
		lastTs:        d.varint(),
		firstRetained: d.uvarint(),
		owner:         d.str(),
		passwordHash:  d.str(),
	}
	if flags&recSettings != 0 {
		rec.settings = d.settings()
	}
	if d.err == nil && (len(d.b) != 0 || rec.firstRetained == 0 || rec.firstRetained > rec.lastSeq+1) {
		d.fail("inconsistent record")
	}
	if d.err != nil {
		return nil, fmt.Errorf("chat: corrupt room record under %q: %w", k, d.err)
	}
	return rec, nil
}

// memberRecord is one user's membership of a room.
type memberRecord struct {
	name     string // the username as the user spells it
	joinedAt int64
	lastRead uint64
	// role is roleMember or roleModerator (the owner is the room record's).
	role byte
	// lastPost is the time of the member's latest post, kept only while
	// the room is in slow mode.
	lastPost int64
}

// encodeMember returns the stored form of m: version, varint joinedAt,
// uvarint lastRead, name and, unless both are zero, the role byte and
// varint lastPost. A plain member is stored as before roles existed.
func encodeMember(m memberRecord) []byte {
	b := make([]byte, 0, 2+4*binary.MaxVarintLen64+len(m.name))
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, m.joinedAt)
	b = binary.AppendUvarint(b, m.lastRead)
	b = wire.AppendString(b, m.name)
	if m.role != roleMember || m.lastPost != 0 {
		b = binary.AppendVarint(append(b, m.role), m.lastPost)
	}
	return b
}

// decodeMember decodes the member record stored under k.
func decodeMember(k, v []byte) (memberRecord, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	m := memberRecord{joinedAt: d.varint(), lastRead: d.uvarint(), name: d.name()}
	if d.err == nil && len(d.b) != 0 {
		m.role, m.lastPost = d.byte1(), d.varint()
		if d.err == nil && (m.role > roleModerator || (m.role == roleMember && m.lastPost == 0)) {
			d.fail("bad role %d", m.role)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return memberRecord{}, fmt.Errorf("chat: corrupt member record under %q: %w", k, d.err)
	}
	return m, nil
}

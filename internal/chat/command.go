package chat

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every chat command. The partition state machine
// dispatches on it to hand the command to StateMachine.
const Tag byte = 'C'

// Operation bytes, the second byte of every command.
const (
	opCreate   byte = 'c'
	opDelete   byte = 'd'
	opJoin     byte = 'j'
	opLeave    byte = 'l'
	opMarkRead byte = 'r'
	opPost     byte = 'p'
	opCompact  byte = 'k'
)

// Flag bits of the commands that carry a flags byte. Unknown bits are
// rejected, so a later field can be added under a new bit without old
// decoders misreading it.
const (
	flagPrivate    byte = 1 << 0 // CreateRoom
	flagInviteOnly byte = 1 << 1 // CreateRoom (ModerationProtocol)
	flagAdmin      byte = 1 << 0 // DeleteRoom
)

// Command is a decoded chat command: CreateRoom, DeleteRoom, Join, Leave,
// MarkRead, Post, Compact, one of the message commands Edit, Remove,
// React, Pin and Notify, or one of the moderation commands SetRole, Invite,
// Moderate and Settings.
//
// Every command is Tag, an operation byte, then its fields in the order they
// are declared. Strings are a uvarint length and the bytes; numbers are
// minimal uvarints; booleans are bits of one flags byte. Room names and
// usernames must not be empty. The decoder accepts only this canonical form.
type Command interface {
	isCommand()
}

// CreateRoom creates Room owned by Owner, who becomes its first member.
//
// Encoding: Tag, 'c', flags (private, invite-only), Room, Owner, uvarint
// MaxMembers, PasswordHash.
type CreateRoom struct {
	Room  string // canonical (lower-case) room name
	Owner string
	// Private rooms need the password to join; PasswordHash is its argon2id
	// PHC string, computed by the Service before proposing. It is empty for
	// public rooms.
	Private      bool
	PasswordHash string
	// InviteOnly makes a private room without a password: only invited
	// users join it (new at ModerationProtocol).
	InviteOnly bool
	// MaxMembers is the most members the room admits, at least 1.
	MaxMembers uint64
}

// DeleteRoom deletes Room on behalf of User, who must be its owner or, with
// Admin, an administrator.
//
// Encoding: Tag, 'd', flags (admin), Room, User.
type DeleteRoom struct {
	Room, User string
	Admin      bool
}

// Join adds User to Room's members.
//
// Encoding: Tag, 'j', Room, User, PasswordHash.
type Join struct {
	Room, User string
	// PasswordHash is, for a private room, the stored PHC string the Service
	// verified the user's password against. Apply admits the user only if it
	// still equals the room's: a room deleted and created again with another
	// password in between refuses the join.
	PasswordHash string
}

// Leave removes User from Room's members.
//
// Encoding: Tag, 'l', Room, User.
type Leave struct {
	Room, User string
}

// MarkRead moves User's read marker in Room up to Seq.
//
// Encoding: Tag, 'r', Room, User, uvarint Seq.
type MarkRead struct {
	Room, User string
	Seq        uint64
}

// Post appends a message by User to Room; a non-empty To makes it a whisper
// to those members. A non-zero ReplyTo makes it a reply in the thread of
// that message; Mentions (usernames the text names), Here (the members
// online when the text says @here) and MentionRoom (@room) name whom it
// mentions.
//
// Encoding without reply or mentions: Tag, 'p', Room, User, uvarint
// len(To), each To, Text (the rest of the command); with them, see
// encodePostFull.
type Post struct {
	Room, User string
	To         []string
	Text       string

	ReplyTo                  uint64
	Mentions, Here           []string
	MentionRoom, MentionHere bool
	// Files are the ids (in Room) of files User uploaded and finished, not
	// yet attached, that the message carries (new at FileProtocol).
	Files []string
}

// Compact removes events older than RetentionMs before the command's time
// from every room of the partition, and what is left of deleted rooms'
// events, deleting at most Budget events (0: DefaultCompactBudget).
//
// Encoding: Tag, 'k', uvarint RetentionMs, uvarint Budget.
type Compact struct {
	// RetentionMs is how long events are kept; 0 keeps them forever.
	RetentionMs uint64
	Budget      uint64
}

func (CreateRoom) isCommand() {}
func (DeleteRoom) isCommand() {}
func (Join) isCommand()       {}
func (Leave) isCommand()      {}
func (MarkRead) isCommand()   {}
func (Post) isCommand()       {}
func (Compact) isCommand()    {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("chat: malformed command")

// EncodeCreateRoom returns the binary encoding of c.
func EncodeCreateRoom(c CreateRoom) []byte {
	var flags byte
	if c.Private {
		flags |= flagPrivate
	}
	if c.InviteOnly {
		flags |= flagInviteOnly
	}
	b := make([]byte, 0, 3+3*binary.MaxVarintLen64+len(c.Room)+len(c.Owner)+len(c.PasswordHash))
	b = append(b, Tag, opCreate, flags)
	b = wire.AppendString(wire.AppendString(b, c.Room), c.Owner)
	b = binary.AppendUvarint(b, c.MaxMembers)
	return wire.AppendString(b, c.PasswordHash)
}

// EncodeDeleteRoom returns the binary encoding of d.
func EncodeDeleteRoom(d DeleteRoom) []byte {
	var flags byte
	if d.Admin {
		flags |= flagAdmin
	}
	b := make([]byte, 0, 3+2*binary.MaxVarintLen64+len(d.Room)+len(d.User))
	b = append(b, Tag, opDelete, flags)
	return wire.AppendString(wire.AppendString(b, d.Room), d.User)
}

// EncodeJoin returns the binary encoding of j.
func EncodeJoin(j Join) []byte {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+len(j.Room)+len(j.User)+len(j.PasswordHash))
	b = append(b, Tag, opJoin)
	return wire.AppendString(wire.AppendString(wire.AppendString(b, j.Room), j.User), j.PasswordHash)
}

// EncodeLeave returns the binary encoding of l.
func EncodeLeave(l Leave) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(l.Room)+len(l.User))
	b = append(b, Tag, opLeave)
	return wire.AppendString(wire.AppendString(b, l.Room), l.User)
}

// EncodeMarkRead returns the binary encoding of m.
func EncodeMarkRead(m MarkRead) []byte {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+len(m.Room)+len(m.User))
	b = append(b, Tag, opMarkRead)
	b = wire.AppendString(wire.AppendString(b, m.Room), m.User)
	return binary.AppendUvarint(b, m.Seq)
}

// EncodePost returns the binary encoding of p.
func EncodePost(p Post) []byte {
	if !p.plain() {
		return encodePostFull(p)
	}
	n := 2 + 3*binary.MaxVarintLen64 + len(p.Room) + len(p.User) + len(p.Text)
	for _, t := range p.To {
		n += binary.MaxVarintLen64 + len(t)
	}
	b := make([]byte, 0, n)
	b = append(b, Tag, opPost)
	b = wire.AppendString(wire.AppendString(b, p.Room), p.User)
	b = binary.AppendUvarint(b, uint64(len(p.To)))
	for _, t := range p.To {
		b = wire.AppendString(b, t)
	}
	return append(b, p.Text...)
}

// EncodeCompact returns the binary encoding of c.
func EncodeCompact(c Compact) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen64)
	b = append(b, Tag, opCompact)
	b = binary.AppendUvarint(b, c.RetentionMs)
	return binary.AppendUvarint(b, c.Budget)
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes, non-empty room names and usernames), so every command it
// accepts re-encodes to the same bytes. It checks structure only: Apply
// checks names and values. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or operation", errMalformed)
	}
	d := decoder{b: cmd[2:]}
	var c Command
	switch cmd[1] {
	case opCreate:
		flags := d.flags(flagPrivate | flagInviteOnly)
		c = CreateRoom{Private: flags&flagPrivate != 0, InviteOnly: flags&flagInviteOnly != 0, Room: d.name(), Owner: d.name(), MaxMembers: d.uvarint(), PasswordHash: d.str()}
	case opDelete:
		flags := d.flags(flagAdmin)
		c = DeleteRoom{Admin: flags&flagAdmin != 0, Room: d.name(), User: d.name()}
	case opJoin:
		c = Join{Room: d.name(), User: d.name(), PasswordHash: d.str()}
	case opLeave:
		c = Leave{Room: d.name(), User: d.name()}
	case opMarkRead:
		c = MarkRead{Room: d.name(), User: d.name(), Seq: d.uvarint()}
	case opPost:
		p := Post{Room: d.name(), User: d.name()}
		n := d.uvarint()
		if d.err == nil && n > uint64(len(d.b))/2 { // every name takes at least 2 bytes
			d.fail("%d recipients in %d bytes", n, len(d.b))
		}
		if d.err == nil && n > 0 {
			p.To = make([]string, n)
			for i := range p.To {
				p.To[i] = d.name()
			}
		}
		p.Text, d.b = string(d.b), nil
		c = p
	case opCompact:
		c = Compact{RetentionMs: d.uvarint(), Budget: d.uvarint()}
	default:
		var ok bool
		if c, ok = decodeMessageCommand(cmd[1], &d); !ok {
			if c, ok = decodeModCommand(cmd[1], &d); !ok {
				if c, ok = decodeHookCommand(cmd[1], &d); !ok { // hooks.go
					if c, ok = decodeOutHookCommand(cmd[1], &d); !ok { // outhooks.go
						c, ok = decodeFileCommand(cmd[1], &d) // command_file.go
					}
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown operation %#x", errMalformed, cmd[1])
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// decoder reads the fields of a command or record. After the first failure
// every read returns a zero value and err keeps the first cause.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
	}
}

// uvarint reads a minimally encoded uvarint.
func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	if n > 1 && d.b[n-1] == 0 {
		d.fail("non-minimal varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint reads a minimally encoded zig-zag varint.
func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// bytes reads a uvarint length and that many bytes, aliasing the input.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length %d with %d bytes left", n, len(d.b))
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// str reads a length-prefixed string, possibly empty.
func (d *decoder) str() string { return string(d.bytes()) }

// name reads a length-prefixed string that must not be empty.
func (d *decoder) name() string {
	s := d.bytes()
	if d.err == nil && len(s) == 0 {
		d.fail("empty name")
	}
	return string(s)
}

// byte1 reads one byte.
func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// flags reads a flags byte and rejects bits outside allowed.
func (d *decoder) flags(allowed byte) byte {
	f := d.byte1()
	if f&^allowed != 0 {
		d.fail("unknown flags %#x", f)
		return 0
	}
	return f
}

package chat

import (
	"encoding/binary"

	"github.com/parley-chat/parley/internal/wire"
)

// Operation bytes of the message commands.
const (
	opPostFull byte = 'P' // Post with a reply or mentions
	opEdit     byte = 'e'
	opRemove   byte = 'x' // delete one message
	opReact    byte = 'a'
	opPin      byte = 'i'
	opNotify   byte = 'n'
)

// Flag bits of the message commands.
const (
	flagMentionRoom byte = 1 << 0 // Post: the text mentions @room
	flagMentionHere byte = 1 << 1 // Post: the text mentions @here
	flagWindowed    byte = 1 << 0 // Edit: WindowMs bounds the edit
	flagUndo        byte = 1 << 0 // React, Pin: take it back
)

// Edit replaces the text of message Seq of Room by its author User. With
// Windowed, the edit is refused once more than WindowMs passed since the
// message was posted (the proposer's --edit-window, carried in the command
// so every replica decides alike).
//
// Encoding: Tag, 'e', flags (windowed), Room, User, uvarint Seq, uvarint
// WindowMs, Text (the rest).
type Edit struct {
	Room, User string
	Seq        uint64
	Windowed   bool
	WindowMs   uint64
	Text       string
}

// Remove deletes message Seq of Room on behalf of User: its author, the
// room's owner or, with Admin, an administrator.
//
// Encoding: Tag, 'x', flags (admin), Room, User, uvarint Seq.
type Remove struct {
	Room, User string
	Seq        uint64
	Admin      bool
}

// React adds (or with Undo, takes back) User's Emoji reaction to message Seq
// of Room.
//
// Encoding: Tag, 'a', flags (undo), Room, User, uvarint Seq, Emoji.
type React struct {
	Room, User string
	Seq        uint64
	Emoji      string
	Undo       bool
}

// Pin pins (or with Undo, unpins) message Seq of Room on behalf of User.
//
// Encoding: Tag, 'i', flags (undo), Room, User, uvarint Seq.
type Pin struct {
	Room, User string
	Seq        uint64
	Undo       bool
}

// Notify appends to User's mention inbox an entry saying that Sender
// mentioned them in message Seq of Room. It is routed by InboxName(User).
//
// Encoding: Tag, 'n', Room, Sender, uvarint Seq, User.
type Notify struct {
	Room, Sender string
	Seq          uint64
	User         string
}

func (Edit) isCommand()   {}
func (Remove) isCommand() {}
func (React) isCommand()  {}
func (Pin) isCommand()    {}
func (Notify) isCommand() {}

// EncodeEdit returns the binary encoding of c.
func EncodeEdit(c Edit) []byte {
	var flags byte
	if c.Windowed {
		flags |= flagWindowed
	}
	b := make([]byte, 0, 3+4*binary.MaxVarintLen64+len(c.Room)+len(c.User)+len(c.Text))
	b = append(b, Tag, opEdit, flags)
	b = wire.AppendString(wire.AppendString(b, c.Room), c.User)
	b = binary.AppendUvarint(binary.AppendUvarint(b, c.Seq), c.WindowMs)
	return append(b, c.Text...)
}

// EncodeRemove returns the binary encoding of c.
func EncodeRemove(c Remove) []byte {
	return encodeTarget(opRemove, c.Admin, c.Room, c.User, c.Seq)
}

// EncodeReact returns the binary encoding of c.
func EncodeReact(c React) []byte {
	return wire.AppendString(encodeTarget(opReact, c.Undo, c.Room, c.User, c.Seq), c.Emoji)
}

// EncodePin returns the binary encoding of c.
func EncodePin(c Pin) []byte {
	return encodeTarget(opPin, c.Undo, c.Room, c.User, c.Seq)
}

// encodeTarget encodes the common head of commands about one message: Tag,
// op, flags (bit 0 when flag), room, user, uvarint seq.
func encodeTarget(op byte, flag bool, room, user string, seq uint64) []byte {
	var flags byte
	if flag {
		flags = 1
	}
	b := make([]byte, 0, 3+4*binary.MaxVarintLen64+len(room)+len(user)+64)
	b = append(b, Tag, op, flags)
	b = wire.AppendString(wire.AppendString(b, room), user)
	return binary.AppendUvarint(b, seq)
}

// EncodeNotify returns the binary encoding of c.
func EncodeNotify(c Notify) []byte {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+len(c.Room)+len(c.Sender)+len(c.User))
	b = append(b, Tag, opNotify)
	b = wire.AppendString(wire.AppendString(b, c.Room), c.Sender)
	b = binary.AppendUvarint(b, c.Seq)
	return wire.AppendString(b, c.User)
}

// encodePostFull encodes a Post with a reply or mentions: Tag, 'P', flags
// (mention room, mention here, files), Room, User, uvarint ReplyTo, uvarint
// len(To), each To, uvarint len(Mentions), each, uvarint len(Here), each,
// with flag files uvarint len(Files), each, Text (the rest).
func encodePostFull(p Post) []byte {
	var flags byte
	if p.MentionRoom {
		flags |= flagMentionRoom
	}
	if p.MentionHere {
		flags |= flagMentionHere
	}
	if len(p.Files) > 0 {
		flags |= flagPostFiles
	}
	b := make([]byte, 0, 64+len(p.Room)+len(p.User)+len(p.Text)+16*(len(p.To)+len(p.Mentions)+len(p.Here)))
	b = append(b, Tag, opPostFull, flags)
	b = wire.AppendString(wire.AppendString(b, p.Room), p.User)
	b = binary.AppendUvarint(b, p.ReplyTo)
	b = appendNames(appendNames(appendNames(b, p.To), p.Mentions), p.Here)
	if len(p.Files) > 0 {
		b = appendNames(b, p.Files)
	}
	return append(b, p.Text...)
}

// plain reports whether p has no reply and no mentions: the short encoding.
func (p Post) plain() bool {
	return p.ReplyTo == 0 && len(p.Mentions) == 0 && len(p.Here) == 0 && !p.MentionRoom && !p.MentionHere && len(p.Files) == 0
}

// decodeMessageCommand decodes the commands of this file; ok is false for
// another operation.
func decodeMessageCommand(op byte, d *decoder) (c Command, ok bool) {
	switch op {
	case opPostFull:
		flags := d.flags(flagMentionRoom | flagMentionHere | flagPostFiles)
		p := Post{MentionRoom: flags&flagMentionRoom != 0, MentionHere: flags&flagMentionHere != 0, Room: d.name(), User: d.name()}
		p.ReplyTo, p.To, p.Mentions, p.Here = d.uvarint(), d.names(), d.names(), d.names()
		if flags&flagPostFiles != 0 {
			if p.Files = d.names(); d.err == nil && len(p.Files) == 0 {
				d.fail("the files flag with no files")
			}
		}
		p.Text, d.b = string(d.b), nil
		if d.err == nil && p.plain() {
			d.fail("a post without reply or mentions has the short encoding")
		}
		return p, true
	case opEdit:
		e := Edit{Windowed: d.flags(flagWindowed)&flagWindowed != 0, Room: d.name(), User: d.name(), Seq: d.uvarint(), WindowMs: d.uvarint()}
		e.Text, d.b = string(d.b), nil
		return e, true
	case opRemove:
		return Remove{Admin: d.flags(flagAdmin) != 0, Room: d.name(), User: d.name(), Seq: d.uvarint()}, true
	case opReact:
		return React{Undo: d.flags(flagUndo) != 0, Room: d.name(), User: d.name(), Seq: d.uvarint(), Emoji: d.name()}, true
	case opPin:
		return Pin{Undo: d.flags(flagUndo) != 0, Room: d.name(), User: d.name(), Seq: d.uvarint()}, true
	case opNotify:
		return Notify{Room: d.name(), Sender: d.name(), Seq: d.uvarint(), User: d.name()}, true
	}
	return nil, false
}

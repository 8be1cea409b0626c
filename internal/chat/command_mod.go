package chat

import (
	"encoding/binary"

	"github.com/parley-chat/parley/internal/wire"
)

// Operation bytes of the role, invitation, moderation and settings
// commands. They are new at ModerationProtocol: a replica of an earlier
// build refuses them as unknown, so the Service proposes none until every
// node speaks it.
const (
	opSetRole  byte = 'R'
	opInvite   byte = 'I'
	opModerate byte = 'M'
	opSettings byte = 'S'
)

// ModerationProtocol is the internal protocol (compat.Protocol) that
// introduced the commands of this file, CreateRoom's InviteOnly, and the
// rules they bring to Join, Post, React and Edit.
const ModerationProtocol = 2

// Flag bits of the commands of this file.
const (
	flagModAdmin byte = 1 << 0 // the actor acts as an administrator
	flagModUndo  byte = 1 << 1 // Invite: withdraw it
)

// SetRole gives Target the role Role in Room on behalf of User, who must be
// the owner or, with Admin, an administrator. RoleOwner moves the ownership
// to Target (a member), and the previous owner, if a member, becomes a
// moderator.
//
// Encoding: Tag, 'R', flags (admin), Room, User, Target, role byte (0
// member, 1 moderator, 2 owner).
type SetRole struct {
	Room, User, Target string
	Role               string
	Admin              bool
}

// Invite lets Target join private Room without its password (or, with
// Undo, withdraws that), on behalf of User: the owner, a moderator or, with
// Admin, an administrator. Joining uses the invitation up.
//
// Encoding: Tag, 'I', flags (admin, undo), Room, User, Target.
type Invite struct {
	Room, User, Target string
	Admin, Undo        bool
}

// ModAction is what a Moderate command does to its target.
type ModAction byte

// Moderation actions.
const (
	ActKick   ModAction = 'k' // remove from the members
	ActBan    ModAction = 'b' // remove and keep from joining and reading, for DurationMs (0: for good)
	ActUnban  ModAction = 'B'
	ActMute   ModAction = 'm' // keep from posting and reacting for DurationMs (more than 0)
	ActUnmute ModAction = 'M'
)

// Moderate applies Action to Target in Room on behalf of User: the owner, a
// moderator or, with Admin, an administrator. Nobody acts on the owner, and
// a moderator acts on members only. A ban or mute lasts DurationMs from the
// command's time.
//
// Encoding: Tag, 'M', flags (admin), action byte, Room, User, Target,
// uvarint DurationMs, Reason (the rest).
type Moderate struct {
	Room, User, Target string
	Action             ModAction
	DurationMs         uint64
	Reason             string
	Admin              bool
}

// Access says who may join a room.
type Access byte

// Room access modes.
const (
	AccessPublic   Access = 0 // anyone
	AccessPassword Access = 1 // with the password or an invitation
	AccessInvite   Access = 2 // with an invitation only
)

// Settings changes the settings of Room whose bits are set in Set, on behalf
// of User: topic and description may be changed by moderators, everything
// else by the owner or, with Admin, an administrator.
//
// Encoding: Tag, 'S', flags (admin), Room, User, Set, then the fields Set
// names in this order: Topic, Description, Announcement (a byte 0 or 1),
// uvarint SlowModeSec, uvarint MaxMembers, Access (a byte) and
// PasswordHash, varint RetentionDays, varint RetentionMessages. The
// retention bits are new at RetentionProtocol.
type Settings struct {
	Room, User   string
	Admin        bool
	Set          SettingsMask
	Topic        string
	Description  string
	Announcement bool
	SlowModeSec  uint64
	MaxMembers   uint64
	Access       Access
	// PasswordHash is the new password's PHC string when Access is
	// AccessPassword, computed by the Service; empty otherwise.
	PasswordHash string
	// RetentionDays and RetentionMessages are the room's own retention
	// (0: the cluster default; RetentionForever: keep for ever).
	RetentionDays, RetentionMessages int64
}

// SettingsMask names the settings a Settings command changes.
type SettingsMask byte

// Settings bits.
const (
	SetTopic SettingsMask = 1 << iota
	SetDescription
	SetAnnouncement
	SetSlowMode
	SetMaxMembers
	SetAccess
	SetRetentionDays     // new at RetentionProtocol
	SetRetentionMessages // new at RetentionProtocol
	setAll               = SetTopic | SetDescription | SetAnnouncement | SetSlowMode | SetMaxMembers | SetAccess |
		SetRetentionDays | SetRetentionMessages
)

// settingNames names the settings bits as the API and settings events do.
var settingNames = []struct {
	bit  SettingsMask
	name string
}{
	{SetTopic, "topic"}, {SetDescription, "description"}, {SetAnnouncement, "announcement"},
	{SetSlowMode, "slow_mode"}, {SetMaxMembers, "max_members"}, {SetAccess, "access"},
	{SetRetentionDays, "retention_days"}, {SetRetentionMessages, "retention_messages"},
}

func (SetRole) isCommand()  {}
func (Invite) isCommand()   {}
func (Moderate) isCommand() {}
func (Settings) isCommand() {}

func modFlags(admin, undo bool) byte {
	var f byte
	if admin {
		f |= flagModAdmin
	}
	if undo {
		f |= flagModUndo
	}
	return f
}

// roleBytes encodes SetRole.Role; an unknown role encodes as 0xff, which
// the decoder refuses.
var roleBytes = map[string]byte{RoleMember: 0, RoleModerator: 1, RoleOwner: 2}

// EncodeSetRole returns the binary encoding of c. A role other than
// RoleMember, RoleModerator and RoleOwner makes a command DecodeCommand
// refuses.
func EncodeSetRole(c SetRole) []byte {
	rb, ok := roleBytes[c.Role]
	if !ok {
		rb = 0xff
	}
	b := append(make([]byte, 0, 8+len(c.Room)+len(c.User)+len(c.Target)), Tag, opSetRole, modFlags(c.Admin, false))
	b = wire.AppendString(wire.AppendString(wire.AppendString(b, c.Room), c.User), c.Target)
	return append(b, rb)
}

// EncodeInvite returns the binary encoding of c.
func EncodeInvite(c Invite) []byte {
	b := append(make([]byte, 0, 8+len(c.Room)+len(c.User)+len(c.Target)), Tag, opInvite, modFlags(c.Admin, c.Undo))
	return wire.AppendString(wire.AppendString(wire.AppendString(b, c.Room), c.User), c.Target)
}

// EncodeModerate returns the binary encoding of c.
func EncodeModerate(c Moderate) []byte {
	b := make([]byte, 0, 16+len(c.Room)+len(c.User)+len(c.Target)+len(c.Reason))
	b = append(b, Tag, opModerate, modFlags(c.Admin, false), byte(c.Action))
	b = wire.AppendString(wire.AppendString(wire.AppendString(b, c.Room), c.User), c.Target)
	b = binary.AppendUvarint(b, c.DurationMs)
	return append(b, c.Reason...)
}

// EncodeSettings returns the binary encoding of c.
func EncodeSettings(c Settings) []byte {
	b := make([]byte, 0, 32+len(c.Room)+len(c.User)+len(c.Topic)+len(c.Description)+len(c.PasswordHash))
	b = append(b, Tag, opSettings, modFlags(c.Admin, false))
	b = wire.AppendString(wire.AppendString(b, c.Room), c.User)
	b = append(b, byte(c.Set))
	if c.Set&SetTopic != 0 {
		b = wire.AppendString(b, c.Topic)
	}
	if c.Set&SetDescription != 0 {
		b = wire.AppendString(b, c.Description)
	}
	if c.Set&SetAnnouncement != 0 {
		b = append(b, boolByte(c.Announcement))
	}
	if c.Set&SetSlowMode != 0 {
		b = binary.AppendUvarint(b, c.SlowModeSec)
	}
	if c.Set&SetMaxMembers != 0 {
		b = binary.AppendUvarint(b, c.MaxMembers)
	}
	if c.Set&SetAccess != 0 {
		b = wire.AppendString(append(b, byte(c.Access)), c.PasswordHash)
	}
	if c.Set&SetRetentionDays != 0 {
		b = binary.AppendVarint(b, c.RetentionDays)
	}
	if c.Set&SetRetentionMessages != 0 {
		b = binary.AppendVarint(b, c.RetentionMessages)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decodeModCommand decodes the commands of this file; ok is false for
// another operation.
func decodeModCommand(op byte, d *decoder) (c Command, ok bool) {
	switch op {
	case opSetRole:
		admin := d.flags(flagModAdmin) != 0
		s := SetRole{Admin: admin, Room: d.name(), User: d.name(), Target: d.name()}
		switch rb := d.byte1(); rb {
		case 0:
			s.Role = RoleMember
		case 1:
			s.Role = RoleModerator
		case 2:
			s.Role = RoleOwner
		default:
			d.fail("unknown role %d", rb)
		}
		return s, true
	case opInvite:
		f := d.flags(flagModAdmin | flagModUndo)
		return Invite{Admin: f&flagModAdmin != 0, Undo: f&flagModUndo != 0, Room: d.name(), User: d.name(), Target: d.name()}, true
	case opModerate:
		m := Moderate{Admin: d.flags(flagModAdmin) != 0, Action: ModAction(d.byte1())}
		switch m.Action {
		case ActKick, ActBan, ActUnban, ActMute, ActUnmute:
		default:
			d.fail("unknown moderation action %#x", byte(m.Action))
		}
		m.Room, m.User, m.Target, m.DurationMs = d.name(), d.name(), d.name(), d.uvarint()
		m.Reason, d.b = string(d.b), nil
		return m, true
	case opSettings:
		return decodeSettings(d), true
	case opLegalHold:
		f := d.flags(flagModAdmin | flagModUndo)
		return LegalHold{Admin: f&flagModAdmin != 0, Lift: f&flagModUndo != 0, Room: d.name(), User: d.name()}, true
	}
	return nil, false
}

func decodeSettings(d *decoder) Settings {
	s := Settings{Admin: d.flags(flagModAdmin) != 0, Room: d.name(), User: d.name()}
	s.Set = SettingsMask(d.flags(byte(setAll)))
	if s.Set&SetTopic != 0 {
		s.Topic = d.str()
	}
	if s.Set&SetDescription != 0 {
		s.Description = d.str()
	}
	if s.Set&SetAnnouncement != 0 {
		switch v := d.byte1(); v {
		case 0, 1:
			s.Announcement = v == 1
		default:
			d.fail("announcement byte %d", v)
		}
	}
	if s.Set&SetSlowMode != 0 {
		s.SlowModeSec = d.uvarint()
	}
	if s.Set&SetMaxMembers != 0 {
		s.MaxMembers = d.uvarint()
	}
	if s.Set&SetAccess != 0 {
		s.Access = Access(d.byte1())
		if s.Access > AccessInvite {
			d.fail("unknown access %d", s.Access)
		}
		s.PasswordHash = d.str()
	}
	if s.Set&SetRetentionDays != 0 {
		s.RetentionDays = d.varint()
	}
	if s.Set&SetRetentionMessages != 0 {
		s.RetentionMessages = d.varint()
	}
	return s
}

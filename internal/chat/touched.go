package chat

// TouchedKey returns the room whose events or existence a command changes
// (a Post, Join, Leave, DeleteRoom or message command; for Notify, the
// user's mention inbox), and false for every other command,
// including those too malformed to name a room. The partition layer's apply
// notifier calls it on every applied command to wake the room's live feeds,
// so it reads the room name only: it does not decode the whole command (a
// malformed command it names a room of wakes the feeds for nothing, which
// costs them one read).
func TouchedKey(cmd []byte) (room string, ok bool) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return "", false
	}
	d := decoder{b: cmd[2:]}
	switch cmd[1] {
	case opPost, opJoin, opLeave:
	case opDelete, opEdit, opRemove, opReact, opPin:
		d.flags(1)
	case opPostFull:
		d.flags(flagMentionRoom | flagMentionHere)
	case opNotify:
		d.name() // room
		d.name() // sender
		d.uvarint()
		user := d.name()
		if d.err != nil {
			return "", false
		}
		return InboxName(user), true
	default:
		return "", false
	}
	room = d.name()
	if d.err != nil {
		return "", false
	}
	return room, true
}

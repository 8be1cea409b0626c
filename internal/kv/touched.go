package kv

// WatchName is the name under which the partition layer's apply notifier
// reports kv commands: watches follow a whole partition's revisions, so
// every command that may take a revision wakes the same waiters.
const WatchName = ""

// TouchedKey reports WatchName for every command that may write keys (a
// put, delete, transaction, expiry or revocation) and false for every other
// command, including those too malformed to decode. The partition layer's
// apply notifier calls it on every applied command, so it reads the header
// only.
func TouchedKey(cmd []byte) (name string, ok bool) {
	if len(cmd) < 3 || cmd[0] != Tag {
		return "", false
	}
	switch cmd[1] {
	case opPut, opDelete, opTxn, opExpire, opRevoke:
		return WatchName, true
	}
	return "", false
}

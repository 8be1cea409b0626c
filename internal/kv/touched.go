package kv

// TouchedKey returns the key a Put or Delete writes, and false for every
// other command, including those too malformed to name a key. The partition
// layer's apply notifier calls it on every applied command (for watches of
// keys), so it reads the header and the key only: it does not decode the
// value.
func TouchedKey(cmd []byte) (key string, ok bool) {
	if len(cmd) < 3 || cmd[0] != Tag || (cmd[1] != opPut && cmd[1] != opDelete) {
		return "", false
	}
	rest := cmd[3:]
	if cmd[2]&flagIfVersion != 0 {
		var err error
		if _, rest, err = readUvarint(rest); err != nil {
			return "", false
		}
	}
	key, _, err := readKey(rest)
	if err != nil {
		return "", false
	}
	return key, true
}

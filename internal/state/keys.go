package state

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, the exclusive upper bound of a Scan over the prefix; nil (the end
// of the key space) when there is none: prefix is empty or all 0xff.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte(nil), prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

package state

import (
	"bytes"
	"sort"
)

// Mem is an in-memory Writer for tests of state machines. It is not safe for
// concurrent use.
type Mem struct {
	m map[string][]byte
}

var _ Writer = (*Mem)(nil)

// NewMem returns an empty Mem.
func NewMem() *Mem { return &Mem{m: map[string][]byte{}} }

// Get implements Reader.
func (s *Mem) Get(key []byte) ([]byte, bool, error) {
	v, ok := s.m[string(key)]
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(v), true, nil
}

// Scan implements Reader.
func (s *Mem) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		if k >= string(lo) && (hi == nil || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !fn([]byte(k), s.m[k]) {
			return nil
		}
	}
	return nil
}

// Set implements Writer.
func (s *Mem) Set(key, value []byte) error {
	s.m[string(key)] = bytes.Clone(value)
	return nil
}

// Delete implements Writer.
func (s *Mem) Delete(key []byte) error {
	delete(s.m, string(key))
	return nil
}

// Len returns the number of keys stored.
func (s *Mem) Len() int { return len(s.m) }

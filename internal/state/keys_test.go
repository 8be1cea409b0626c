package state

import (
	"bytes"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte("a"), []byte("b")},
		{[]byte("c/room/"), []byte("c/room0")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{'a', 0xfe, 0xff, 0xff}, []byte{'a', 0xff}},
		{[]byte{0xff, 0xff}, nil},
		{[]byte{0x00, 0xff}, []byte{0x01}},
	} {
		in := bytes.Clone(tc.in)
		if got := PrefixEnd(tc.in); !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("PrefixEnd changed its argument %q to %q", in, tc.in)
		}
	}
}

// Every key with the prefix sorts below the bound, and the bound itself does
// not start with the prefix.
func FuzzPrefixEnd(f *testing.F) {
	f.Add([]byte("k/"), []byte("x"))
	f.Add([]byte{0xff}, []byte{0xff})
	f.Fuzz(func(t *testing.T, prefix, suffix []byte) {
		end := PrefixEnd(prefix)
		key := append(bytes.Clone(prefix), suffix...)
		if end != nil && (bytes.Compare(key, end) >= 0 || bytes.HasPrefix(end, prefix) && len(prefix) > 0) {
			t.Fatalf("PrefixEnd(%q) = %q, not above %q", prefix, end, key)
		}
		if end == nil && len(bytes.Trim(prefix, "\xff")) != 0 {
			t.Fatalf("PrefixEnd(%q) = nil with a bound possible", prefix)
		}
	})
}

package partition

import (
	"bytes"
	"testing"
)

// A forwarded scan page decodes without panicking, and an accepted page
// survives an encode-decode round trip (lengths may arrive as non-minimal
// varints, so the bytes themselves need not match).
func FuzzDecodePairs(f *testing.F) {
	f.Add(encodePairs([][2][]byte{{[]byte("k1"), []byte("v1")}, {[]byte(""), []byte("v")}}))
	f.Add([]byte{0x05, 'a'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := decodePairs(b)
		if err != nil {
			return
		}
		again, err := decodePairs(encodePairs(pairs))
		if err != nil || len(again) != len(pairs) {
			t.Fatalf("round trip of %q: %q, %v", pairs, again, err)
		}
		for i := range pairs {
			if !bytes.Equal(again[i][0], pairs[i][0]) || !bytes.Equal(again[i][1], pairs[i][1]) {
				t.Fatalf("pair %d: %q became %q", i, pairs[i], again[i])
			}
		}
	})
}

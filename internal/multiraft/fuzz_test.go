package multiraft

import (
	"bytes"
	"testing"
)

// Any bytes decode to an envelope or errBadEnvelope without panicking; an
// accepted envelope has an id of at most 1024 bytes and encodes back to the
// same bytes, and every encoded envelope decodes to itself.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, e := range []envelope{
		{id: []byte("p1"), timeMs: 1700000000000, windowMs: 120000, cmd: []byte("Kput")},
		{id: bytes.Repeat([]byte("i"), 1024), timeMs: -1, cmd: nil},
	} {
		f.Add(e.encode(nil))
	}
	f.Add([]byte{envelopeVersion, 0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		if len(e.id) > 1024 {
			t.Fatalf("accepted a %d-byte id", len(e.id))
		}
		again, err := decodeEnvelope(e.encode(nil))
		if err != nil || !bytes.Equal(again.id, e.id) || again.timeMs != e.timeMs || again.windowMs != e.windowMs || !bytes.Equal(again.cmd, e.cmd) {
			t.Fatalf("round trip of %+v gave %+v, %v", e, again, err)
		}
	})
}

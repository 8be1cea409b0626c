package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/internal/wire"
)

var errBad = errors.New("bad")

func TestUvarint(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want uint64
		ok   bool
	}{
		{"zero", []byte{0}, 0, true},
		{"one byte", []byte{0x7f, 9}, 127, true},
		{"two bytes", []byte{0x80, 0x01}, 128, true},
		{"non-minimal", []byte{0x80, 0x00}, 0, false},
		{"truncated", []byte{0x80}, 0, false},
		{"empty", nil, 0, false},
	} {
		v, _, err := wire.Uvarint(tc.in, errBad)
		if tc.ok != (err == nil) || (tc.ok && v != tc.want) {
			t.Errorf("%s: Uvarint(%x) = %d, %v", tc.name, tc.in, v, err)
		}
		if err != nil && !errors.Is(err, errBad) {
			t.Errorf("%s: error %v does not wrap the caller's sentinel", tc.name, err)
		}
	}
}

func TestString(t *testing.T) {
	b := wire.AppendString(wire.AppendString(nil, "room"), "x")
	s, rest, err := wire.String(b, errBad)
	if err != nil || s != "room" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if s, rest, err = wire.String(rest, errBad); err != nil || s != "x" || len(rest) != 0 {
		t.Fatalf("second String = %q, %x, %v", s, rest, err)
	}
	for _, bad := range [][]byte{{0}, {5, 'a'}, {0x80, 0}} {
		if _, _, err := wire.String(bad, errBad); !errors.Is(err, errBad) {
			t.Errorf("String(%x) = %v, want a malformed error", bad, err)
		}
	}
}

// FuzzString checks that whatever String accepts re-encodes to the bytes it
// consumed (the encoding is canonical) and that it never panics.
func FuzzString(f *testing.F) {
	f.Add([]byte{4, 'r', 'o', 'o', 'm'})
	f.Add([]byte{0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := wire.String(b, errBad)
		if err != nil {
			return
		}
		if got := wire.AppendString(nil, s); !bytes.Equal(got, b[:len(b)-len(rest)]) {
			t.Fatalf("String(%x) = %q re-encodes to %x", b, s, got)
		}
	})
}

func TestBytes(t *testing.T) {
	b := wire.AppendBytes(wire.AppendBytes(nil, nil), []byte("key"))
	v, rest, err := wire.Bytes(b, errBad)
	if err != nil || v != nil {
		t.Fatalf("Bytes = %q, %v; want nil", v, err)
	}
	if v, rest, err = wire.Bytes(rest, errBad); err != nil || string(v) != "key" || len(rest) != 0 {
		t.Fatalf("second Bytes = %q, %x, %v", v, rest, err)
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, {0x80, 0}} {
		if _, _, err := wire.Bytes(bad, errBad); !errors.Is(err, errBad) {
			t.Errorf("Bytes(%x) = %v, want a malformed error", bad, err)
		}
	}
}

// FuzzBytes checks that whatever Bytes accepts re-encodes to the bytes it
// consumed and that it never panics.
func FuzzBytes(f *testing.F) {
	f.Add([]byte{3, 'k', 'e', 'y'})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := wire.Bytes(b, errBad)
		if err != nil {
			return
		}
		if got := wire.AppendBytes(nil, v); !bytes.Equal(got, b[:len(b)-len(rest)]) {
			t.Fatalf("Bytes(%x) = %q re-encodes to %x", b, v, got)
		}
	})
}

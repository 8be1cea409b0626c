package storage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// encodeStream builds a snapshot stream of pairs.
func encodeStream(t testing.TB, pairs [][2][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw, err := newStreamWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if err := sw.pair(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadStream(t *testing.T) {
	pairs := [][2][]byte{{nil, nil}, {[]byte("k"), []byte("v")}, {[]byte("big"), bytes.Repeat([]byte{7}, 3<<20)}}
	stream := encodeStream(t, pairs)
	t.Run("round trip", func(t *testing.T) {
		var got [][2][]byte
		err := readStream(bytes.NewReader(stream), func(k, v []byte) error {
			got = append(got, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
		if err != nil || len(got) != len(pairs) {
			t.Fatalf("readStream = %d pairs, %v", len(got), err)
		}
		for i := range pairs {
			if !bytes.Equal(got[i][0], pairs[i][0]) || !bytes.Equal(got[i][1], pairs[i][1]) {
				t.Fatalf("pair %d differs", i)
			}
		}
	})
	t.Run("callback error is returned unchanged", func(t *testing.T) {
		boom := errors.New("boom")
		if err := readStream(bytes.NewReader(stream), func(k, v []byte) error { return boom }); err != boom {
			t.Fatalf("err = %v; want boom", err)
		}
	})
	t.Run("every truncation is refused", func(t *testing.T) {
		small := encodeStream(t, pairs[:2])
		for n := range len(small) {
			if err := readStream(bytes.NewReader(small[:n]), func(k, v []byte) error { return nil }); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("stream cut at %d of %d: err = %v", n, len(small), err)
			}
		}
	})
	t.Run("huge declared length", func(t *testing.T) {
		bad := append([]byte(streamMagic), recordPair, 1, 'k', 0xff, 0xff, 0xff, 0xff, 0x03) // ~1 GiB value
		if err := readStream(bytes.NewReader(bad), func(k, v []byte) error { return nil }); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("err = %v", err)
		}
	})
}

func FuzzReadStream(f *testing.F) {
	f.Add(encodeStream(f, nil))
	f.Add(encodeStream(f, [][2][]byte{{[]byte("a"), []byte("b")}, {[]byte(""), []byte("c")}}))
	f.Add([]byte(streamMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		var pairs [][2][]byte
		err := readStream(bytes.NewReader(data), func(k, v []byte) error {
			pairs = append(pairs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// An accepted stream carries exactly what its re-encoding carries.
		var again [][2][]byte
		err = readStream(bytes.NewReader(encodeStream(t, pairs)), func(k, v []byte) error {
			again = append(again, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
		if err != nil || fmt.Sprint(again) != fmt.Sprint(pairs) {
			t.Fatalf("re-encoded stream decodes to %q, %v; want %q", again, err, pairs)
		}
	})
}

func FuzzDecodeApplied(f *testing.F) {
	for _, st := range []AppliedState{{}, {Index: 5, Term: 2, ConfState: raftpb.ConfState{Voters: []uint64{1, 2}, AutoLeave: true}}} {
		buf := make([]byte, appliedSize(&st))
		if err := encodeApplied(buf, &st); err != nil {
			f.Fatal(err)
		}
		f.Add(buf)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeApplied(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		buf := make([]byte, appliedSize(&st))
		if err := encodeApplied(buf, &st); err != nil {
			t.Fatal(err)
		}
		again, err := decodeApplied(buf)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(st) {
			t.Fatalf("re-decoded %v, %v; want %v", again, err, st)
		}
	})
}

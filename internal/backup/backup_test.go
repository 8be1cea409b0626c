package backup

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// group is one group's state for the tests.
type group struct {
	applied uint64
	pairs   [][2]string
}

// mustFile writes a backup of groups (0..P) as a node and the CLI would.
func mustFile(t testing.TB, groups []group) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, Header{DataFormat: 2, ClusterID: "c1", Hash: "fnv1a64", Partitions: len(groups) - 1, ReplicationFactor: 3, CreatedMs: 1700000000000})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		var sec bytes.Buffer
		sw := NewSectionWriter(&sec, uint64(i), g.applied)
		for _, p := range g.pairs {
			if err := sw.Pair([]byte(p[0]), []byte(p[1])); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sw.Finish(); err != nil {
			t.Fatal(err)
		}
		info, err := w.CopySection(&sec)
		if err != nil {
			t.Fatal(err)
		}
		if info.Group != uint64(i) || info.Applied != g.applied || info.Keys != uint64(len(g.pairs)) {
			t.Fatalf("CopySection = %+v for group %d", info, i)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var sample = []group{
	{applied: 7, pairs: [][2]string{{"map", `{"cluster_id":"c1"}`}}},
	{applied: 120, pairs: [][2]string{{"k/a", "1"}, {"k/b", ""}, {"k/c", strings.Repeat("x", 3000)}}},
	{applied: 3},
	{applied: 99, pairs: [][2]string{{"\x00bin\xff", "\x00\x01"}}},
}

func TestRead_RoundTrip(t *testing.T) {
	file := mustFile(t, sample)
	var got []group
	sum, err := Read(bytes.NewReader(file), Visitor{
		Section: func(g, applied uint64) error {
			if g != uint64(len(got)) {
				return fmt.Errorf("section %d after %d", g, len(got))
			}
			got = append(got, group{applied: applied})
			return nil
		},
		Pair: func(k, v []byte) error {
			got[len(got)-1].pairs = append(got[len(got)-1].pairs, [2]string{string(k), string(v)})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(sample) {
		t.Fatalf("read %v, wrote %v", got, sample)
	}
	if sum.Header.ClusterID != "c1" || sum.Header.Partitions != 3 || sum.Header.ReplicationFactor != 3 || sum.Header.FormatVersion != FormatVersion {
		t.Fatalf("header %+v", sum.Header)
	}
	if sum.FileBytes != int64(len(file)) || len(sum.SHA256) != 64 || len(sum.Sections) != 4 || sum.Sections[1].Keys != 3 || sum.Sections[1].Bytes != 3*3+1+3000 {
		t.Fatalf("summary %+v", sum)
	}
}

// Every changed byte anywhere in the file is found, by a section's, the
// header's or the whole file's checksum, or by the structure.
func TestRead_CorruptionDetected(t *testing.T) {
	file := mustFile(t, sample)
	for i := range file {
		bad := bytes.Clone(file)
		bad[i] ^= 0x5a
		if _, err := Verify(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d changed: Verify = %v, want ErrCorrupt", i, err)
		}
	}
}

func TestRead_TruncationDetected(t *testing.T) {
	file := mustFile(t, sample)
	for n := range len(file) {
		if _, err := Verify(bytes.NewReader(file[:n])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d: Verify = %v, want ErrCorrupt", n, len(file), err)
		}
	}
	if _, err := Verify(bytes.NewReader(append(bytes.Clone(file), 0))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a byte appended: Verify = %v", err)
	}
}

func TestWriter_CopySection_Refusals(t *testing.T) {
	section := func(g uint64, pairs ...string) []byte {
		var b bytes.Buffer
		sw := NewSectionWriter(&b, g, 5)
		for i := 0; i < len(pairs); i += 2 {
			_ = sw.Pair([]byte(pairs[i]), []byte(pairs[i+1]))
		}
		if _, err := sw.Finish(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	newW := func() *Writer {
		w, err := NewWriter(&bytes.Buffer{}, Header{Partitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	good := section(0, "a", "1", "b", "2")
	for name, in := range map[string][]byte{
		"wrong group":    section(1),
		"truncated":      good[:len(good)-1],
		"flipped byte":   append(append([]byte{}, good[:5]...), append([]byte{good[5] ^ 1}, good[6:]...)...),
		"trailing bytes": append(bytes.Clone(good), 0),
		"out of order":   section(0, "b", "1", "a", "2"),
		"empty":          nil,
	} {
		t.Run(name, func(t *testing.T) {
			w := newW()
			if _, err := w.CopySection(bytes.NewReader(in)); err == nil {
				t.Fatal("accepted")
			}
			if err := w.Close(); err == nil {
				t.Fatal("Close after a refused section succeeded")
			}
		})
	}
	w := newW()
	if _, err := w.CopySection(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "group 1 not written") {
		t.Fatalf("Close with a section missing = %v", err)
	}
}

func TestRead_UnknownVersion(t *testing.T) {
	file := mustFile(t, sample[:2])
	// A header of another version is refused (here its checksum fails too).
	bad := bytes.Replace(file, []byte(`"format_version":1`), []byte(`"format_version":9`), 1)
	if _, err := Verify(bytes.NewReader(bad)); err == nil {
		t.Fatal("accepted")
	}
}

func FuzzRead(f *testing.F) {
	f.Add(mustFile(f, sample))
	f.Add(mustFile(f, sample[:2]))
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := Verify(bytes.NewReader(b))
		if err == nil && sum.FileBytes != int64(len(b)) {
			t.Fatalf("accepted %d bytes as a file of %d", len(b), sum.FileBytes)
		}
	})
}

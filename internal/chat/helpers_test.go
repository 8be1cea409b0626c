package chat

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// fixture applies commands to one partition's state with a clock that moves
// one millisecond per command unless set.
type fixture struct {
	t     testing.TB
	w     state.Writer
	now   int64
	index uint64
}

func newFixture(t testing.TB) *fixture {
	return &fixture{t: t, w: state.NewMem(), now: 1000}
}

// apply applies cmd at the fixture's time and advances it.
func (f *fixture) apply(cmd []byte) (Result, error) {
	f.t.Helper()
	f.index++
	res, err := StateMachine{}.Apply(f.w, state.Meta{Partition: 1, Index: f.index, TimeMs: f.now}, cmd)
	if err != nil {
		f.t.Fatalf("Apply: %v", err)
	}
	f.now++
	return DecodeResult(res)
}

// ok applies cmd and fails the test on a refusal.
func (f *fixture) ok(cmd []byte) Result {
	f.t.Helper()
	r, err := f.apply(cmd)
	if err != nil {
		c, _ := DecodeCommand(cmd)
		f.t.Fatalf("%#v: %v", c, err)
	}
	return r
}

func (f *fixture) create(room, owner string) Result {
	f.t.Helper()
	return f.ok(EncodeCreateRoom(CreateRoom{Room: room, Owner: owner, MaxMembers: 30}))
}

func (f *fixture) join(room, user string) Result {
	f.t.Helper()
	return f.ok(EncodeJoin(Join{Room: room, User: user}))
}

func (f *fixture) post(room, user, text string, to ...string) Result {
	f.t.Helper()
	return f.ok(EncodePost(Post{Room: room, User: user, Text: text, To: to}))
}

// events returns every retained event of room, raw.
func (f *fixture) events(room string) []Event {
	f.t.Helper()
	evs, err := EventsAfter(f.w, room, f.room(room).FirstRetainedSeq-1, 1<<30)
	if err != nil {
		f.t.Fatalf("EventsAfter(%q): %v", room, err)
	}
	return evs
}

func (f *fixture) room(name string) Room {
	f.t.Helper()
	r, found, err := GetRoom(f.w, name)
	if err != nil || !found {
		f.t.Fatalf("GetRoom(%q) = %v, %v", name, found, err)
	}
	return r
}

// dump renders every key and value of r, in key order.
func dump(t testing.TB, r state.Reader) string {
	t.Helper()
	var b strings.Builder
	if err := r.Scan(nil, nil, func(k, v []byte) bool {
		fmt.Fprintf(&b, "%q=%x\n", k, v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func seqs(evs []Event) []uint64 {
	out := make([]uint64, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func seqRange(lo, hi uint64) []uint64 {
	out := []uint64{}
	for s := lo; s <= hi; s++ {
		out = append(out, s)
	}
	return out
}

// sortedMem is a state.Writer over a sorted slice, for benchmarks: its Scan
// seeks like Pebble's iterators instead of sorting the whole map as state.Mem
// does, so a History benchmark measures History.
type sortedMem struct {
	keys [][]byte
	vals [][]byte
}

var _ state.Writer = (*sortedMem)(nil)

func (s *sortedMem) find(k []byte) (int, bool) {
	i := sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], k) >= 0 })
	return i, i < len(s.keys) && bytes.Equal(s.keys[i], k)
}

func (s *sortedMem) Get(k []byte) ([]byte, bool, error) {
	i, ok := s.find(k)
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(s.vals[i]), true, nil
}

func (s *sortedMem) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	i, _ := s.find(lo)
	for ; i < len(s.keys) && (hi == nil || bytes.Compare(s.keys[i], hi) < 0); i++ {
		if !fn(s.keys[i], s.vals[i]) {
			break
		}
	}
	return nil
}

func (s *sortedMem) Set(k, v []byte) error {
	i, ok := s.find(k)
	if ok {
		s.vals[i] = bytes.Clone(v)
		return nil
	}
	s.keys = slices.Insert(s.keys, i, bytes.Clone(k))
	s.vals = slices.Insert(s.vals, i, bytes.Clone(v))
	return nil
}

func (s *sortedMem) Delete(k []byte) error {
	if i, ok := s.find(k); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
		s.vals = slices.Delete(s.vals, i, i+1)
	}
	return nil
}

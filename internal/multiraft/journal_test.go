package multiraft

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
)

// journal is the interaction tests' state machine. Each command is a write's
// name; Apply records it as the next journal entry, under "j/" and its
// 8-byte sequence number, with the Raft index it was applied at, and returns
// the sequence number. "seq" holds the count. A replica's journal is thus
// the exact history of what it applied, in order.
type journal struct{}

var (
	keySeq        = []byte("seq")
	prefixJournal = []byte("j/")
)

func (journal) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	v, _, err := w.Get(keySeq)
	if err != nil {
		return nil, err
	}
	var seq uint64
	if len(v) == 8 {
		seq = binary.BigEndian.Uint64(v)
	}
	seq++
	out := binary.BigEndian.AppendUint64(nil, seq)
	if err := w.Set(keySeq, out); err != nil {
		return nil, err
	}
	rec := append(binary.AppendUvarint(nil, meta.Index), cmd...)
	return out, w.Set(binary.BigEndian.AppendUint64(append([]byte(nil), prefixJournal...), seq), rec)
}

// jentry is one journal entry: the write applied seq-th, at Raft index
// index.
type jentry struct {
	seq, index uint64
	write      string
}

func (j jentry) String() string { return fmt.Sprintf("%d:%s@%d", j.seq, j.write, j.index) }

// readJournal returns a replica's journal in order.
func readJournal(r state.Reader) ([]jentry, error) {
	var out []jentry
	var bad error
	err := r.Scan(prefixJournal, state.PrefixEnd(prefixJournal), func(k, v []byte) bool {
		idx, n := binary.Uvarint(v)
		if len(k) != len(prefixJournal)+8 || n <= 0 {
			bad = fmt.Errorf("corrupt journal entry %q = %q", k, v)
			return false
		}
		out = append(out, jentry{seq: binary.BigEndian.Uint64(k[len(prefixJournal):]), index: idx, write: string(v[n:])})
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}

// checkJournal reports how a replica's journal breaks what a client relies
// on: entries numbered 1, 2, 3... (nothing applied out of turn), Raft
// indexes increasing (applied order is log order), every write once
// (nothing applied twice), and every acknowledged write at the sequence
// number its client was told.
func checkJournal(j []jentry, acked map[string]uint64) []string {
	var problems []string
	at := map[string]uint64{}
	for i, e := range j {
		switch {
		case e.seq != uint64(i+1):
			problems = append(problems, fmt.Sprintf("entry %d has sequence number %d", i+1, e.seq))
		case i > 0 && e.index <= j[i-1].index:
			problems = append(problems, fmt.Sprintf("%v applied after %v: not in log order", e, j[i-1]))
		}
		if prev, dup := at[e.write]; dup {
			problems = append(problems, fmt.Sprintf("%s applied twice, as %d and %d", e.write, prev, e.seq))
		}
		at[e.write] = e.seq
	}
	for _, w := range sortedKeys(acked) {
		if got, ok := at[w]; !ok {
			problems = append(problems, fmt.Sprintf("acknowledged %s is lost", w))
		} else if got != acked[w] {
			problems = append(problems, fmt.Sprintf("acknowledged %s as %d, applied as %d", w, acked[w], got))
		}
	}
	return problems
}

// checkLog compares a replica's journal with its Raft log from the first
// index it still holds to its applied index: every command entry is
// applied at its own index or, for a retry of an id applied before, not at
// all; every journal entry in that range is the command at its index.
func checkLog(db *storage.DB, j []jentry) []string {
	g, err := db.Group(1)
	if err != nil {
		return []string{err.Error()}
	}
	first, _ := g.FirstIndex()
	applied := g.Applied().Index
	if first > applied {
		return nil // the log holds nothing applied (a snapshot was just installed)
	}
	ents, err := g.Entries(first, applied+1, math.MaxUint64)
	if err != nil {
		return []string{fmt.Sprintf("read log [%d, %d]: %v", first, applied, err)}
	}
	atIndex, firstAt := map[uint64]string{}, map[string]uint64{}
	for _, e := range j {
		atIndex[e.index], firstAt[e.write] = e.write, e.index
	}
	var problems []string
	for _, ent := range ents {
		write := ""
		if ent.Type == raftpb.EntryNormal && len(ent.Data) > 0 {
			env, err := decodeEnvelope(ent.Data)
			if err != nil {
				problems = append(problems, fmt.Sprintf("entry %d: %v", ent.Index, err))
				continue
			}
			write = string(env.cmd)
		}
		if got, ok := atIndex[ent.Index]; ok && got != write {
			problems = append(problems, fmt.Sprintf("journal has %s at index %d, the log %q", got, ent.Index, write))
		}
		if write == "" {
			continue
		}
		switch i, ok := firstAt[write]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("committed %s at index %d never applied", write, ent.Index))
		case i > ent.Index:
			problems = append(problems, fmt.Sprintf("%s committed at index %d but applied at %d", write, ent.Index, i))
		}
	}
	return problems
}

// isPrefix reports whether a is a prefix of b.
func isPrefix(a, b []jentry) bool { return len(a) <= len(b) && slices.Equal(a, b[:len(a)]) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lines joins problems, or returns ok when there are none.
func lines(ok string, problems []string) string {
	if len(problems) == 0 {
		return ok
	}
	return strings.Join(problems, "\n")
}

// Package linearizable holds the porcupine model of Parley's KV API and a
// history recorder that many clients share: the one home of the
// linearizability checks of KV, used by the in-process cluster tests
// (internal/testcluster) and the fault-injection tests (internal/jepsen).
// It is for tests only.
package linearizable

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// KVInput is one KV operation: a put of Value, or a get.
type KVInput struct {
	Put   bool
	Key   string
	Value string
}

// KVOutput is what an operation returned.
type KVOutput struct {
	Value   string
	Version uint64
	Found   bool
	// Unknown marks a put whose outcome the client never learned (a
	// timeout, a connection lost): it may take effect at any later time.
	Unknown bool
}

type kvState struct {
	value   string
	version uint64
	found   bool
}

// KVModel is the sequential specification of KV, key by key: a put raises
// the key's version by one; a get sees the last put.
var KVModel = porcupine.Model{
	Partition: PartitionBy(func(in any) string { return in.(KVInput).Key }),
	Init:      func() any { return kvState{} },
	Step: func(s, in, out any) (bool, any) {
		st, i, o := s.(kvState), in.(KVInput), out.(KVOutput)
		if i.Put {
			next := kvState{value: i.Value, version: st.version + 1, found: true}
			return o.Unknown || o.Version == next.version, next
		}
		return o.Found == st.found && (!o.Found || (o.Value == st.value && o.Version == st.version)), st
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(KVInput), out.(KVOutput)
		if i.Put {
			return fmt.Sprintf("put(%s,%s) -> v%d unknown=%v", i.Key, i.Value, o.Version, o.Unknown)
		}
		return fmt.Sprintf("get(%s) -> %q v%d found=%v", i.Key, o.Value, o.Version, o.Found)
	},
}

// PartitionBy returns a porcupine Partition function that checks the
// operations of each key (as keyOf reads it from an operation's input)
// apart: a model whose keys are independent checks in far less time.
func PartitionBy(keyOf func(in any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := keyOf(op.Input)
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	}
}

// UnknownReturn is the return time of an operation whose outcome is
// unknown: it may take effect at any time after its call.
const UnknownReturn = int64(1) << 62

// History records operations from many clients, with times relative to
// its start.
type History struct {
	mu    sync.Mutex
	ops   []porcupine.Operation
	start time.Time
}

// NewHistory starts an empty history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now returns the time to record as an operation's call or return.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records one operation.
func (h *History) Add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns a copy of the operations recorded so far.
func (h *History) Ops() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// Unknown counts the operations whose outcome is unknown.
func (h *History) Unknown() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if o, ok := op.Output.(KVOutput); ok && o.Unknown {
			n++
		}
	}
	return n
}

// Check runs porcupine on the history within timeout. When it is not
// linearizable (or the check timed out) it writes porcupine's visualization
// to vizPath (when not "") and returns the result.
func (h *History) Check(timeout time.Duration, vizPath string) porcupine.CheckResult {
	res, info := porcupine.CheckOperationsVerbose(KVModel, h.Ops(), timeout)
	if res != porcupine.Ok && vizPath != "" {
		_ = porcupine.VisualizePath(KVModel, info, vizPath)
	}
	return res
}

// FirstIllegal describes, one line per operation in call order, the
// operations of the first key whose history is not linearizable ("" when
// every key's is).
func FirstIllegal(ops []porcupine.Operation) string {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(KVInput).Key
		byKey[k] = append(byKey[k], op)
	}
	for k, kops := range byKey {
		if porcupine.CheckOperations(KVModel, kops) {
			continue
		}
		slices.SortFunc(kops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		var b strings.Builder
		for _, op := range kops {
			ret := time.Duration(op.Return)
			if op.Return == UnknownReturn {
				ret = -1
			}
			fmt.Fprintf(&b, "%s: client %d [%v, %v] %s\n", k, op.ClientId, time.Duration(op.Call), ret, KVModel.DescribeOperation(op.Input, op.Output))
		}
		return b.String()
	}
	return ""
}

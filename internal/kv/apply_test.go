package kv

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// step is one command applied in a TestStateMachine_Apply case and its
// expected result.
type step struct {
	cmd         []byte
	wantVersion uint64
	wantCode    errs.Code
}

func put(key, value string) []byte {
	return EncodePut(Put{Key: key, Value: []byte(value)})
}

func TestStateMachine_Apply(t *testing.T) {
	cases := []struct {
		name      string
		steps     []step
		wantValue string // value of "a" at the end; "" means missing
		wantVer   uint64
	}{
		{
			name:      "put creates at version 1",
			steps:     []step{{put("a", "1"), 1, ""}},
			wantValue: "1", wantVer: 1,
		},
		{
			name:      "put again increments",
			steps:     []step{{put("a", "1"), 1, ""}, {put("a", "2"), 2, ""}, {put("a", "3"), 3, ""}},
			wantValue: "3", wantVer: 3,
		},
		{
			name: "cas ok",
			steps: []step{
				{put("a", "1"), 1, ""},
				{EncodePut(Put{Key: "a", Value: []byte("2"), IfVersion: 1}), 2, ""},
			},
			wantValue: "2", wantVer: 2,
		},
		{
			name: "cas mismatch reports current version",
			steps: []step{
				{put("a", "1"), 1, ""},
				{put("a", "2"), 2, ""},
				{EncodePut(Put{Key: "a", Value: []byte("x"), IfVersion: 1}), 2, errs.PreconditionFailed},
			},
			wantValue: "2", wantVer: 2,
		},
		{
			name:  "cas on missing key",
			steps: []step{{EncodePut(Put{Key: "a", Value: []byte("x"), IfVersion: 1}), 0, errs.PreconditionFailed}},
		},
		{
			name: "if absent",
			steps: []step{
				{EncodePut(Put{Key: "a", Value: []byte("1"), IfAbsent: true}), 1, ""},
				{EncodePut(Put{Key: "a", Value: []byte("2"), IfAbsent: true}), 1, errs.PreconditionFailed},
			},
			wantValue: "1", wantVer: 1,
		},
		{
			name:  "delete returns removed version",
			steps: []step{{put("a", "1"), 1, ""}, {put("a", "2"), 2, ""}, {EncodeDelete(Delete{Key: "a"}), 2, ""}},
		},
		{
			name:  "delete missing",
			steps: []step{{EncodeDelete(Delete{Key: "a"}), 0, errs.NotFound}},
		},
		{
			name: "delete cas",
			steps: []step{
				{put("a", "1"), 1, ""},
				{EncodeDelete(Delete{Key: "a", IfVersion: 2}), 1, errs.PreconditionFailed},
				{EncodeDelete(Delete{Key: "a", IfVersion: 1}), 1, ""},
				{EncodeDelete(Delete{Key: "a", IfVersion: 1}), 0, errs.NotFound},
			},
		},
		{
			name: "version restarts after delete",
			steps: []step{
				{put("a", "1"), 1, ""}, {put("a", "2"), 2, ""},
				{EncodeDelete(Delete{Key: "a"}), 2, ""},
				{put("a", "3"), 1, ""},
			},
			wantValue: "3", wantVer: 1,
		},
		{
			name:      "other keys are independent",
			steps:     []step{{put("a", "1"), 1, ""}, {put("b", "1"), 1, ""}, {put("ab", "1"), 1, ""}},
			wantValue: "1", wantVer: 1,
		},
		{
			name:      "garbage is rejected without change",
			steps:     []step{{put("a", "1"), 1, ""}, {[]byte{Tag, 'Z'}, 0, errs.Invalid}},
			wantValue: "1", wantVer: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := state.NewMem()
			for i, s := range tc.steps {
				res := mustApply(t, mem, int64(100+i), s.cmd)
				v, err := DecodeResult(res)
				if errs.CodeOf(err) != s.wantCode || v != s.wantVersion {
					t.Fatalf("step %d: got (%d, %v), want (%d, %q)", i, v, err, s.wantVersion, s.wantCode)
				}
			}
			it, found, err := Get(mem, "a")
			if err != nil {
				t.Fatal(err)
			}
			if found != (tc.wantValue != "") || string(it.Value) != tc.wantValue || it.Version != tc.wantVer {
				t.Fatalf("Get(a) = (%q, v%d, %v), want (%q, v%d)", it.Value, it.Version, found, tc.wantValue, tc.wantVer)
			}
		})
	}
}

func TestStateMachine_ApplyModifiedTime(t *testing.T) {
	mem := state.NewMem()
	mustApply(t, mem, 1000, put("a", "1"))
	mustApply(t, mem, 2000, put("a", "2"))
	it, _, err := Get(mem, "a")
	if err != nil {
		t.Fatal(err)
	}
	if it.ModifiedMs != 2000 {
		t.Fatalf("ModifiedMs = %d, want 2000", it.ModifiedMs)
	}
}

func TestStateMachine_ApplyCorruptRecord(t *testing.T) {
	mem := state.NewMem()
	if err := mem.Set(dataKey("a"), []byte("short")); err != nil {
		t.Fatal(err)
	}
	if _, err := (StateMachine{}).Apply(mem, state.Meta{}, put("a", "1")); err == nil {
		t.Fatal("Apply over a corrupt record succeeded, want error")
	}
}

func TestStateMachine_ApplyDeterministic(t *testing.T) {
	var cmds [][]byte
	for i := range 200 {
		key := fmt.Sprintf("k%d", i%17)
		switch i % 5 {
		case 0, 1:
			cmds = append(cmds, put(key, fmt.Sprint(i)))
		case 2:
			cmds = append(cmds, EncodePut(Put{Key: key, Value: []byte("cas"), IfVersion: uint64(i % 3)}))
		case 3:
			cmds = append(cmds, EncodeDelete(Delete{Key: key, IfVersion: uint64(i % 2)}))
		case 4:
			cmds = append(cmds, EncodePut(Put{Key: key, IfAbsent: true}))
		}
		if i%9 == 0 { // every other command, with TTLs, leases and transactions
			cmds = append(cmds, encodeCommand(t, allCommands[(i/9)%len(allCommands)]))
		}
	}
	run := func() (*state.Mem, [][]byte) {
		mem := state.NewMem()
		var results [][]byte
		for i, c := range cmds {
			results = append(results, mustApply(t, mem, int64(i), c))
		}
		return mem, results
	}
	m1, r1 := run()
	m2, r2 := run()
	for i := range r1 {
		if !bytes.Equal(r1[i], r2[i]) {
			t.Fatalf("result %d differs: % x vs % x", i, r1[i], r2[i])
		}
	}
	if d1, d2 := dump(t, m1), dump(t, m2); d1 != d2 {
		t.Fatalf("states differ:\n%s\nvs\n%s", d1, d2)
	}
}

func BenchmarkStateMachine_Apply(b *testing.B) {
	mem := state.NewMem()
	cmd := EncodePut(Put{Key: "users/alice/settings", Value: bytes.Repeat([]byte("x"), 256)})
	var sm StateMachine
	b.ReportAllocs()
	b.SetBytes(int64(len(cmd)))
	i := int64(0)
	for b.Loop() {
		i++
		if _, err := sm.Apply(mem, state.Meta{Index: uint64(i), TimeMs: i}, cmd); err != nil {
			b.Fatal(err)
		}
	}
}

func mustApply(t *testing.T, w state.Writer, timeMs int64, cmd []byte) []byte {
	t.Helper()
	res, err := StateMachine{}.Apply(w, state.Meta{Partition: 1, TimeMs: timeMs}, cmd)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// dump renders every key and value of mem, in key order.
func dump(t *testing.T, mem *state.Mem) string {
	t.Helper()
	var b bytes.Buffer
	if err := mem.Scan(nil, nil, func(k, v []byte) bool {
		fmt.Fprintf(&b, "%q=%x\n", k, v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

package presence

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// apply applies c at leader time nowMs and returns the result.
func apply(t *testing.T, w state.Writer, nowMs int64, c Command) []byte {
	t.Helper()
	res, err := StateMachine{}.Apply(w, state.Meta{Partition: 1, Index: 1, TimeMs: nowMs}, encode(t, c))
	if err != nil {
		t.Fatalf("Apply(%#v): %v", c, err)
	}
	return res
}

func mustCount(t *testing.T, res []byte, want uint64) {
	t.Helper()
	n, err := DecodeCountResult(res)
	if err != nil || n != want {
		t.Fatalf("result = %d, %v; want %d", n, err, want)
	}
}

func mustOnline(t *testing.T, r state.Reader, nowMs int64, want ...string) {
	t.Helper()
	got, err := Online(r, nowMs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Online at %d = %q, want %q", nowMs, got, want)
	}
}

func TestStateMachine_RenewAndExpiry(t *testing.T) {
	w := state.NewMem()
	mustCount(t, apply(t, w, 1000, Renew{Node: "n1", TTLMs: 500, Users: []string{"Bob", "alice"}}), 2)
	grace := Grace.Milliseconds()
	mustOnline(t, w, 1000, "alice", "Bob")
	// Online until expiry plus the readers' grace, offline after.
	mustOnline(t, w, 1500+grace-1, "alice", "Bob")
	mustOnline(t, w, 1500+grace)
	// A renewal extends from the leader time it is applied at.
	apply(t, w, 1400, Renew{Node: "n1", TTLMs: 500, Users: []string{"alice"}})
	mustOnline(t, w, 1500+grace, "alice")
	mustOnline(t, w, 1900+grace)
}

func TestStateMachine_ReleaseKeepsOtherNodesLeases(t *testing.T) {
	w := state.NewMem()
	apply(t, w, 1000, Renew{Node: "n1", TTLMs: 10000, Users: []string{"alice", "bob"}})
	apply(t, w, 1000, Renew{Node: "n2", TTLMs: 10000, Users: []string{"ALICE"}})
	// alice is connected through two nodes; n1 ends both of its leases.
	mustCount(t, apply(t, w, 1100, Release{Node: "n1", Users: []string{"alice", "bob"}}), 2)
	mustOnline(t, w, 1100, "ALICE")
	on, err := IsOnline(w, []string{"Alice", "bob", "carol"}, 1100)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"Alice": true, "bob": false, "carol": false}; !reflect.DeepEqual(on, want) {
		t.Fatalf("IsOnline = %v, want %v", on, want)
	}
	// Releasing what is not held changes nothing.
	mustCount(t, apply(t, w, 1200, Release{Node: "n1", Users: []string{"alice"}}), 0)
	mustCount(t, apply(t, w, 1200, Release{Node: "n2", Users: []string{"alice"}}), 1)
	mustOnline(t, w, 1200)
}

func TestStateMachine_Expire(t *testing.T) {
	w := state.NewMem()
	apply(t, w, 1000, Renew{Node: "n1", TTLMs: 100, Users: []string{"a", "b", "c"}})
	apply(t, w, 1000, Renew{Node: "n2", TTLMs: 5000, Users: []string{"a"}})
	if has, err := HasExpired(w, 1099); err != nil || has {
		t.Fatalf("HasExpired before expiry = %v, %v", has, err)
	}
	if has, err := HasExpired(w, 1100); err != nil || !has {
		t.Fatalf("HasExpired at expiry = %v, %v", has, err)
	}
	n, more, err := DecodeExpireResult(apply(t, w, 1100, Expire{Limit: 2}))
	if err != nil || n != 2 || !more {
		t.Fatalf("first Expire = %d, %v, %v; want 2 deleted and more", n, more, err)
	}
	n, more, err = DecodeExpireResult(apply(t, w, 1100, Expire{Limit: 2}))
	if err != nil || n != 1 || more {
		t.Fatalf("second Expire = %d, %v, %v; want 1 deleted, no more", n, more, err)
	}
	leases, err := Leases(w)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Lease{{User: "a", Node: "n2", ExpiresMs: 6000}}; !reflect.DeepEqual(leases, want) {
		t.Fatalf("leases left = %+v, want %+v", leases, want)
	}
}

func TestStateMachine_RejectsMalformed(t *testing.T) {
	w := state.NewMem()
	res, err := StateMachine{}.Apply(w, state.Meta{TimeMs: 1}, []byte{Tag, opRenew, 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeCountResult(res); err == nil {
		t.Fatal("malformed command accepted")
	}
	if leases, _ := Leases(w); len(leases) != 0 {
		t.Fatalf("malformed command wrote %v", leases)
	}
}

func TestStateMachine_KeysKeepUsersApart(t *testing.T) {
	// ("ab", node "c...") and ("abc", node ...) must never share keys.
	w := state.NewMem()
	apply(t, w, 0, Renew{Node: "cn", TTLMs: 1000, Users: []string{"ab"}})
	apply(t, w, 0, Renew{Node: "n", TTLMs: 1000, Users: []string{"abc"}})
	apply(t, w, 0, Release{Node: "n", Users: []string{"abc"}})
	mustOnline(t, w, 0, "ab")
}

func TestChanges(t *testing.T) {
	prev := map[string]bool{"a": true, "b": false, "c": true, "d": true}
	cur := map[string]bool{"a": true, "b": true, "c": false, "e": true, "f": false}
	want := []Change{{"b", true}, {"c", false}, {"d", false}, {"e", true}}
	if got := Changes(prev, cur); !reflect.DeepEqual(got, want) {
		t.Fatalf("Changes = %v, want %v", got, want)
	}
	if got := Changes(nil, nil); len(got) != 0 {
		t.Fatalf("Changes(nil, nil) = %v", got)
	}
}

func BenchmarkOnline_10kLeases(b *testing.B) {
	w := state.NewMem()
	users := make([]string, 0, 1000)
	for i := range 10_000 {
		users = append(users, fmt.Sprintf("user%05d", i))
		if len(users) == cap(users) {
			if _, err := (StateMachine{}).Apply(w, state.Meta{TimeMs: 1000}, EncodeRenew(Renew{Node: "n1", TTLMs: 11000, Users: users})); err != nil {
				b.Fatal(err)
			}
			users = users[:0]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, err := Online(w, 2000); err != nil || len(got) != 10_000 {
			b.Fatalf("Online = %d users, %v", len(got), err)
		}
	}
}

package api

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// leaseStore is a PresenceService over presence leases in an in-memory
// replicator: the node's tracker without connections or clocks (the
// replicator's leader time starts at the epoch, and so does now).
type leaseStore struct {
	rep   *statetest.Replicator
	nowMs int64
}

func (l *leaseStore) renew(t *testing.T, node string, users ...string) {
	t.Helper()
	for _, u := range users {
		cmd := presence.EncodeRenew(presence.Renew{Node: node, TTLMs: 10_000, Users: []string{u}})
		if _, err := l.rep.Propose(context.Background(), l.rep.PartitionOf(presence.Fold(u)), "", cmd); err != nil {
			t.Fatal(err)
		}
	}
}

func (l *leaseStore) OnlineUsers(ctx context.Context) ([]string, error) {
	var all []string
	for _, p := range l.rep.Partitions() {
		if _, err := l.rep.Read(ctx, p, true, func(r state.Reader) error {
			users, err := presence.Online(r, l.nowMs)
			all = append(all, users...)
			return err
		}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b string) int { return strings.Compare(presence.Fold(a), presence.Fold(b)) })
	return all, nil
}

func TestAPI_UsersOnline(t *testing.T) {
	store := &leaseStore{rep: statetest.NewReplicator(4, presence.StateMachine{})}
	e := newFullEnv(t, envOptions{cfg: Config{Presence: store}})
	token := e.signUp(t, "alice")
	get := func() []string {
		t.Helper()
		var out struct {
			Users []map[string]any `json:"users"`
		}
		mustJSON(t, e.call(t, token, http.MethodGet, "/api/v1/users/online", ""), http.StatusOK, &out)
		if out.Users == nil {
			t.Fatal(`"users" is missing or null`)
		}
		names := []string{}
		for _, u := range out.Users {
			if len(u) != 1 {
				t.Fatalf("user entry %v, want only username", u)
			}
			names = append(names, u["username"].(string))
		}
		return names
	}
	if got := get(); len(got) != 0 {
		t.Fatalf("online before any lease = %q", got)
	}
	store.renew(t, "n1", "carol", "Bob")
	store.renew(t, "n2", "alice", "bob")
	// bob is online through two nodes and listed once, as the first lease
	// (n1's) spells him.
	if got, want := get(), []string{"alice", "Bob", "carol"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("online = %q, want %q", got, want)
	}
	t.Run("expired leases are offline", func(t *testing.T) {
		store.nowMs = 60_000
		defer func() { store.nowMs = 0 }()
		if got := get(); len(got) != 0 {
			t.Fatalf("online after expiry = %q", got)
		}
	})
	t.Run("needs a token", func(t *testing.T) {
		mustError(t, e.do(t, http.MethodGet, "/api/v1/users/online", ""), http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("presence unavailable", func(t *testing.T) {
		store.rep.SetErr(errs.New(errs.Unavailable, "no leader"))
		defer store.rep.SetErr(nil)
		mustError(t, e.call(t, token, http.MethodGet, "/api/v1/users/online", ""), http.StatusServiceUnavailable, "unavailable", "")
	})
}

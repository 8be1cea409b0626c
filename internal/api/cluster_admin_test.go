package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

// recordingAdmin is a ClusterAdmin that records calls and answers with
// err when set.
type recordingAdmin struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (a *recordingAdmin) record(call string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, call)
	return a.err
}

func (a *recordingAdmin) DrainNode(_ context.Context, id string) ([]Move, error) {
	if err := a.record("drain " + id); err != nil {
		return nil, err
	}
	return []Move{{Partition: 3, From: id, Phase: "planned"}}, nil
}

func (a *recordingAdmin) RemoveNode(_ context.Context, id string) error {
	return a.record("remove " + id)
}

func (a *recordingAdmin) ClusterEvents(context.Context) ([]ClusterEvent, error) {
	return []ClusterEvent{{Ts: 1, Kind: "node_dead", Node: "n3", Detail: "seen by n1"}}, a.record("events")
}

func TestClusterAdmin_DrainRemoveEvents(t *testing.T) {
	adm := &recordingAdmin{}
	e := newFullEnv(t, envOptions{cfg: Config{Admin: adm}})
	alice := e.signUp(t, "alice") // the first user: admin
	bob := e.signUp(t, "bob")

	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/cluster/nodes/n2/drain"},
		{http.MethodDelete, "/api/v1/cluster/nodes/n2"},
	} {
		if w := e.call(t, bob, c.method, c.path, "{}"); w.Code != http.StatusForbidden {
			t.Fatalf("%s %s by a user = %d %s", c.method, c.path, w.Code, w.Body)
		}
	}
	if len(adm.calls) != 0 {
		t.Fatalf("a refused request reached the cluster: %v", adm.calls)
	}

	var dr DrainResult
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/cluster/nodes/n2/drain", "{}"), http.StatusAccepted, &dr)
	if dr.Node != "n2" || len(dr.Moves) != 1 || dr.Moves[0].From != "n2" {
		t.Fatalf("drain answer %+v", dr)
	}
	mustJSON(t, e.call(t, alice, http.MethodDelete, "/api/v1/cluster/nodes/n2", ""), http.StatusOK, nil)

	var evs ClusterEvents
	mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/cluster/events", ""), http.StatusOK, &evs)
	if len(evs.Events) != 1 || evs.Events[0].Kind != "node_dead" {
		t.Fatalf("events %+v", evs)
	}
	if w := e.do(t, http.MethodGet, "/api/v1/cluster/events", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("events without a token = %d", w.Code)
	}

	adm.err = errs.New(errs.Conflict, "cannot drain node n2: no other eligible node can take its replica of group 1 (add a node first)")
	w := e.call(t, alice, http.MethodPost, "/api/v1/cluster/nodes/n2/drain", "{}")
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "add a node first") {
		t.Fatalf("impossible drain = %d %s", w.Code, w.Body)
	}
	adm.err = errs.New(errs.NotFound, "no node %q in the cluster", "n9")
	if w := e.call(t, alice, http.MethodDelete, "/api/v1/cluster/nodes/n9", ""); w.Code != http.StatusNotFound {
		t.Fatalf("remove unknown = %d %s", w.Code, w.Body)
	}
	want := []string{"drain n2", "remove n2", "events", "drain n2", "remove n9"}
	if strings.Join(adm.calls, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %v, want %v", adm.calls, want)
	}
}

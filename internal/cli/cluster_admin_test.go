package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/client"
)

// The server side of drain, remove and verify is being built elsewhere:
// these tests run the commands against fakes answering the documented JSON
// of docs/API.md and the admin endpoints' contract.

// fakeAdmin is an httptest server with the admin endpoints' documented
// answers.
type fakeAdmin struct {
	mu       sync.Mutex
	statuses []client.ClusterStatus // GET /api/v1/cluster answers in turn; the last repeats
	drained  []string
	removed  []string
	verify   string        // body of POST /api/v1/cluster/verify
	moves    []client.Move // the moves a drain plans; nil: two
	refuse   int           // when set, every admin call fails with this status
}

func (f *fakeAdmin) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter) bool {
		f.mu.Lock()
		status := f.refuse
		f.mu.Unlock()
		if status == 0 {
			return false
		}
		code := map[int]string{403: "forbidden", 404: "not_found", 409: "conflict"}[status]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": "refused by the fake", "retryable": false}})
		return true
	}
	mux.HandleFunc("GET /api/v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		st := f.statuses[0]
		if len(f.statuses) > 1 {
			f.statuses = f.statuses[1:]
		}
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("POST /api/v1/cluster/nodes/{id}/drain", func(w http.ResponseWriter, r *http.Request) {
		if fail(w) {
			return
		}
		f.mu.Lock()
		f.drained = append(f.drained, r.PathValue("id"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		moves := f.moves
		if moves == nil {
			moves = []client.Move{{Partition: 1, From: "n3", To: "n4"}, {Partition: 2, From: "n3", To: "n1"}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"node": r.PathValue("id"), "moves": moves})
	})
	mux.HandleFunc("DELETE /api/v1/cluster/nodes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if fail(w) {
			return
		}
		f.mu.Lock()
		f.removed = append(f.removed, r.PathValue("id"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /api/v1/cluster/verify", func(w http.ResponseWriter, r *http.Request) {
		if fail(w) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		_, _ = w.Write([]byte(f.verify))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// set changes the fake's answers under its lock.
func (f *fakeAdmin) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

// withNode3 returns a status where n3 holds replicas and moves are under
// way.
func withNode3(replicas int, moves ...client.Move) client.ClusterStatus {
	return client.ClusterStatus{ClusterID: "c1", Nodes: []client.NodeStatus{
		{ID: "n1", Addr: "127.0.0.1:1", State: "alive", Replicas: 4},
		{ID: "n3", Addr: "127.0.0.1:3", State: "draining", Replicas: replicas},
	}, Moves: moves}
}

func TestClusterDrain(t *testing.T) {
	ctx := context.Background()
	t.Run("follows the moves until the node is empty", func(t *testing.T) {
		f := &fakeAdmin{statuses: []client.ClusterStatus{
			withNode3(2, client.Move{Partition: 1, From: "n3", To: "n4", Phase: "learner"}),
			withNode3(2, client.Move{Partition: 1, From: "n3", To: "n4", Phase: "promoting"}, client.Move{Partition: 2, From: "n3", To: "n1", Phase: "learner"}),
			withNode3(1, client.Move{Partition: 2, From: "n3", To: "n1", Phase: "learner"}),
			withNode3(0, client.Move{Partition: 2, From: "n3", To: "n1", Phase: "removing"}),
			withNode3(0),
		}}
		url := f.start(t)
		out := mustRun(t, ctx, "cluster", "drain", "n3", "--interval", "1ms", "--server", url, "--token", "t")
		want := `draining n3: 2 moves planned
partition 1: n3 -> n4 (learner)
n3 holds 2 partition replicas
partition 1: n3 -> n4 (promoting)
partition 2: n3 -> n1 (learner)
n3 holds 1 partition replica
partition 2: n3 -> n1 (removing)
n3 holds 0 partition replicas
n3 is drained; remove it with: parley cluster remove n3
`
		if out != want {
			t.Errorf("drain printed:\n%s\nwant:\n%s", out, want)
		}
		if len(f.drained) != 1 || f.drained[0] != "n3" {
			t.Errorf("drain calls %q", f.drained)
		}
	})
	t.Run("--no-wait returns once started", func(t *testing.T) {
		f := &fakeAdmin{statuses: []client.ClusterStatus{withNode3(2)}}
		url := f.start(t)
		if out := mustRun(t, ctx, "cluster", "drain", "n3", "--no-wait", "--server", url, "--token", "t"); out != "draining n3: 2 moves planned\n" {
			t.Errorf("drain --no-wait printed %q", out)
		}
	})
	for _, status := range []int{403, 409} {
		f := &fakeAdmin{statuses: []client.ClusterStatus{withNode3(2)}, refuse: status}
		url := f.start(t)
		r := run(ctx, nil, "", "cluster", "drain", "n3", "--server", url, "--token", "t")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "error: refused by the fake (") {
			t.Errorf("drain refused with %d = %+v", status, r)
		}
	}
}

func TestClusterRemove(t *testing.T) {
	ctx := context.Background()
	f := &fakeAdmin{statuses: []client.ClusterStatus{withNode3(0)}}
	url := f.start(t)
	if out := mustRun(t, ctx, "cluster", "remove", "n3", "--server", url, "--token", "t"); out != "removed n3\n" {
		t.Errorf("remove printed %q", out)
	}
	if len(f.removed) != 1 || f.removed[0] != "n3" {
		t.Errorf("remove calls %q", f.removed)
	}
	f.set(func() { f.refuse = 409 })
	if r := run(ctx, nil, "", "cluster", "remove", "n1", "--server", url, "--token", "t"); r.code != 1 || !strings.Contains(r.stderr, "(conflict)") {
		t.Errorf("remove of a live node = %+v, want conflict", r)
	}
}

func TestClusterVerify(t *testing.T) {
	ctx := context.Background()
	const match = `{"partitions":[
	  {"group":1,"applied":40,"match":true,"replicas":[{"node":"n1","replica":11,"applied":40,"checksum":"9f2c"},{"node":"n2","replica":12,"applied":40,"checksum":"9f2c"}]},
	  {"group":2,"applied":7,"match":true,"replicas":[{"node":"n1","replica":21,"applied":7,"checksum":18446744073709551615},{"node":"n2","replica":22,"applied":7,"checksum":18446744073709551615}]}],
	  "mismatches":0}`
	f := &fakeAdmin{statuses: []client.ClusterStatus{withNode3(0)}, verify: match}
	url := f.start(t)
	out := mustRun(t, ctx, "cluster", "verify", "--server", url, "--token", "t")
	for _, want := range []string{"PARTITION  APPLIED  NODE  REPLICA  CHECKSUM", "1          40       n1    11       9f2c", "n2    22       18446744073709551615  yes", "\n2 partitions: every replica matches\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	var rep client.VerifyReport
	if err := json.Unmarshal([]byte(mustRun(t, ctx, "cluster", "verify", "--json", "--server", url, "--token", "t")), &rep); err != nil ||
		len(rep.Partitions) != 2 || rep.Partitions[1].Replicas[0].Checksum != "18446744073709551615" {
		t.Errorf("verify --json = %+v (%v)", rep, err)
	}

	f.set(func() {
		f.verify = strings.Replace(strings.Replace(match, `"match":true,"replicas":[{"node":"n1","replica":21`, `"match":false,"replicas":[{"node":"n1","replica":21`, 1), `"mismatches":0`, `"mismatches":1`, 1)
	})
	r := run(ctx, nil, "", "cluster", "verify", "--server", url, "--token", "t")
	if r.code != 1 || !strings.Contains(r.stdout, "\nreplicas differ in 1 of 2 partitions (2)\n") || !strings.Contains(r.stdout, "NO") ||
		r.stderr != "error: replicas differ in 1 of 2 partitions (2)\n" {
		t.Errorf("verify with a mismatch = %+v", r)
	}
	f.set(func() { f.refuse = 403 })
	if r := run(ctx, nil, "", "cluster", "verify", "--server", url, "--token", "t"); r.code != 1 || !strings.Contains(r.stderr, "(forbidden)") {
		t.Errorf("verify as a non-admin = %+v, want forbidden", r)
	}
}

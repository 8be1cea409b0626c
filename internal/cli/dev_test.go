package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestDev_ThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	base := freeBasePort(t, 6)
	dir := t.TempDir()
	args := []string{"dev", "--nodes", "3", "--base-port", strconv.Itoa(base), "--data-dir", dir, "--partitions", "4", "--tick", "20ms"}
	tableRE := regexp.MustCompile(`(?m)^n1\s+(http://\S+)\s+\S+[\s\S]*^n3\s+(http://\S+)\s+\S+[\s\S]*running`)

	out, errOut, stop := background(t, args...)
	m := waitFor(t, out, errOut, tableRE, 60*time.Second)
	n1, n3 := m[1], m[2]
	tok := signUp(t, n1)
	if want := "http://127.0.0.1:" + strconv.Itoa(base+4); n3 != want {
		t.Errorf("node 3 serves %s, want %s", n3, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("a put on node 1 is readable on node 3", func(t *testing.T) {
		mustRun(t, ctx, "kv", "put", "colour", "blue", "--server", n1, "--token", tok)
		if got := mustRun(t, ctx, "kv", "get", "colour", "--server", n3, "--token", tok); got != "blue" {
			t.Errorf("get on node 3 = %q, want blue", got)
		}
	})
	// Stop only once every replica exists and caught up, so the restart
	// below resumes a settled cluster.
	waitConverged(t, ctx, n1, tok, 3)
	if code := stop(); code != 0 {
		t.Fatalf("dev exit code %d, stderr %s", code, errOut)
	}

	t.Run("a restart resumes the data", func(t *testing.T) {
		out, errOut, stop := background(t, args...)
		waitFor(t, out, errOut, tableRE, 60*time.Second)
		if got := mustRun(t, ctx, "kv", "get", "colour", "--server", n3, "--token", tok); got != "blue" {
			t.Errorf("get after restart = %q, want blue", got)
		}
		if code := stop(); code != 0 {
			t.Errorf("dev exit code %d", code)
		}
	})
}

// waitConverged polls the cluster status at url until every partition has
// rf replicas, all leaders or followers, none behind.
func waitConverged(t *testing.T, ctx context.Context, url, token string, rf int) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		var st client.ClusterStatus
		r := run(ctx, nil, "", "cluster", "status", "--json", "--server", url, "--token", token)
		last = r.stdout + r.stderr
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &st) == nil && converged(&st, rf) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("cluster did not converge; last status:\n%s", last)
}

// converged reports whether every partition of st has rf settled replicas.
func converged(st *client.ClusterStatus, rf int) bool {
	if len(st.Partitions) == 0 || len(st.Moves) > 0 {
		return false
	}
	for _, p := range st.Partitions {
		if p.Leader == "" || len(p.Replicas) != rf {
			return false
		}
		for _, r := range p.Replicas {
			if (r.Role != "leader" && r.Role != "follower") || r.LagEntries == nil || *r.LagEntries != 0 {
				return false
			}
		}
	}
	return true
}

package testcluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A node whose data directory was quarantined refuses to start, naming
// --rebuild-quarantined; started with it, the node sets the contents aside
// (kept, marker and all), joins again under its id and gets its replicas
// back from its peers: every acknowledged write is on it again, its
// replicas agree with the others', and the cluster lists it once.
func TestCluster_RebuildQuarantinedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newRebuildCluster(t)
	want := map[string]string{}
	putKeys(t, c, want, 0, 20)

	c.Kill(2)
	dir := c.DataDir(2)
	reason := "storage: the store holds corrupt data and is quarantined: block checksum mismatch (file 000007.sst)"
	if err := os.WriteFile(filepath.Join(dir, storage.QuarantineFile), []byte(reason+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := c.RestartEdited(2, func(cfg *config.Config) { cfg.Join = nil })
	if err == nil || !strings.Contains(err.Error(), "quarantined") || !strings.Contains(err.Error(), "--rebuild-quarantined") {
		t.Fatalf("start on a quarantined data dir = %v, want a refusal naming --rebuild-quarantined", err)
	}

	rebuildSelf(t, c, 2)
	aside, _ := filepath.Glob(filepath.Join(dir, "quarantined-*", storage.QuarantineFile))
	if len(aside) != 1 {
		t.Fatalf("set-aside markers %v, want the one marker moved into a quarantined-* subdirectory", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || !strings.Contains(string(b), "000007.sst") {
		t.Fatalf("the set-aside marker reads %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, storage.QuarantineFile)); !os.IsNotExist(err) {
		t.Fatalf("the data dir still holds the marker at its top: %v", err)
	}
	checkRebuilt(t, c, 2, want)
}

// A node restarted on an old copy of its data directory is refused as
// stale by its peers, and the directory is marked so; a later start is
// refused naming --rebuild-quarantined, and with it the node sets the
// directory aside in a stale-* subdirectory, joins again under its id and
// gets every acknowledged write back from its peers, those made after the
// copy included.
func TestCluster_RebuildStaleNode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newRebuildCluster(t)
	want := map[string]string{}
	putKeys(t, c, want, 0, 10)

	// An old copy of n3's data directory, then a newer start of it that
	// its peers record, then writes the copy does not hold.
	c.Kill(2)
	dir, old := c.DataDir(2), filepath.Join(t.TempDir(), "old")
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	putKeys(t, c, want, 10, 20)
	c.Kill(2)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(old)); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartEdited(2, func(cfg *config.Config) { cfg.Join = nil }); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("start on the old copy = %v, want it refused as stale", err)
	}
	err := c.RestartEdited(2, func(*config.Config) {})
	if err == nil || !strings.Contains(err.Error(), "found stale") || !strings.Contains(err.Error(), "--rebuild-quarantined") {
		t.Fatalf("start on a data dir marked stale = %v, want a refusal naming --rebuild-quarantined", err)
	}

	rebuildSelf(t, c, 2)
	if aside, _ := filepath.Glob(filepath.Join(dir, "stale-*")); len(aside) != 1 {
		t.Fatalf("set-aside directories %v, want one stale-* subdirectory", aside)
	}
	checkRebuilt(t, c, 2, want)
}

// newRebuildCluster starts 3 nodes at RF 3 and waits until every partition
// is fully replicated.
func newRebuildCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.New(t, testcluster.Options{Nodes: 3, ReplicationFactor: 3, Partitions: 4, Tick: 20 * time.Millisecond})
	testcluster.WaitReplicated(t, c.Client(0), time.Minute)
	return c
}

// putKeys puts key-i = value-i for i in [from, to) through node 0 and
// records each in want.
func putKeys(t *testing.T, c *testcluster.Cluster, want map[string]string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i)
		testcluster.MustPut(t, c.Client(0), k, v, client.PutOptions{})
		want[k] = v
	}
}

// rebuildSelf starts node i with --rebuild-quarantined, joining through
// node 0 with the cluster's join token.
func rebuildSelf(t *testing.T, c *testcluster.Cluster, i int) {
	t.Helper()
	join, token := c.Node(0).ClusterAddr(), c.JoinToken()
	if err := c.RestartEdited(i, func(cfg *config.Config) {
		cfg.Join, cfg.JoinToken, cfg.RebuildQuarantined = []string{join}, token, true
	}); err != nil {
		t.Fatalf("start with --rebuild-quarantined: %v", err)
	}
}

// checkRebuilt waits until every partition is fully replicated again and
// checks that the replicas agree, that rebuilt node i holds every key of
// want, and that the cluster lists the node once.
func checkRebuilt(t *testing.T, c *testcluster.Cluster, i int, want map[string]string) {
	t.Helper()
	admin := c.Client(0)
	testcluster.WaitReplicated(t, admin, 2*time.Minute)
	c.VerifyReplicas(time.Minute)
	rebuilt := c.Client(i)
	for k, v := range want {
		if got, _ := testcluster.MustGet(t, rebuilt, k, client.GetOptions{Stale: true}); got != v {
			t.Fatalf("%s on the rebuilt node = %q, want %q", k, got, v)
		}
	}
	st, err := admin.Cluster(testcluster.StepContext(t))
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("n%d", i+1)
	var ids []string
	for _, n := range st.Nodes {
		ids = append(ids, n.ID)
	}
	if strings.Count(strings.Join(ids, ","), id) != 1 {
		t.Fatalf("cluster nodes %v, want %s listed once", ids, id)
	}
}

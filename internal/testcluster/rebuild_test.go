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
	c := testcluster.New(t, testcluster.Options{Nodes: 3, ReplicationFactor: 3, Partitions: 4, Tick: 20 * time.Millisecond})
	admin := c.Client(0)
	testcluster.WaitReplicated(t, admin, time.Minute)
	want := map[string]string{}
	for i := range 20 {
		k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i)
		testcluster.MustPut(t, admin, k, v, client.PutOptions{})
		want[k] = v
	}

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

	join, token := c.Node(0).ClusterAddr(), c.JoinToken()
	if err := c.RestartEdited(2, func(cfg *config.Config) {
		cfg.Join, cfg.JoinToken, cfg.RebuildQuarantined = []string{join}, token, true
	}); err != nil {
		t.Fatalf("start with --rebuild-quarantined: %v", err)
	}
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

	testcluster.WaitReplicated(t, admin, 2*time.Minute)
	c.VerifyReplicas(time.Minute)
	rebuilt := c.Client(2)
	for k, v := range want {
		if got, _ := testcluster.MustGet(t, rebuilt, k, client.GetOptions{Stale: true}); got != v {
			t.Fatalf("%s on the rebuilt node = %q, want %q", k, got, v)
		}
	}
	st, err := admin.Cluster(testcluster.StepContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range st.Nodes {
		ids = append(ids, n.ID)
	}
	if strings.Count(strings.Join(ids, ","), "n3") != 1 {
		t.Fatalf("cluster nodes %v, want n3 listed once", ids)
	}
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
	c := testcluster.New(t, testcluster.Options{Nodes: 3, ReplicationFactor: 3, Partitions: 4, Tick: 20 * time.Millisecond})
	admin := c.Client(0)
	testcluster.WaitReplicated(t, admin, time.Minute)
	want := map[string]string{}
	put := func(from, to int) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i)
			testcluster.MustPut(t, admin, k, v, client.PutOptions{})
			want[k] = v
		}
	}
	put(0, 10)

	// An old copy of n3's data directory, then a newer start of it that
	// its peers record, then writes the copy does not hold.
	c.Kill(2)
	dir, old := c.DataDir(2), filepath.Join(t.TempDir(), "old")
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	put(10, 20)
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

	join, token := c.Node(0).ClusterAddr(), c.JoinToken()
	if err := c.RestartEdited(2, func(cfg *config.Config) {
		cfg.Join, cfg.JoinToken, cfg.RebuildQuarantined = []string{join}, token, true
	}); err != nil {
		t.Fatalf("start with --rebuild-quarantined: %v", err)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, "stale-*")); len(aside) != 1 {
		t.Fatalf("set-aside directories %v, want one stale-* subdirectory", aside)
	}
	testcluster.WaitReplicated(t, admin, 2*time.Minute)
	c.VerifyReplicas(time.Minute)
	rebuilt := c.Client(2)
	for k, v := range want {
		if got, _ := testcluster.MustGet(t, rebuilt, k, client.GetOptions{Stale: true}); got != v {
			t.Fatalf("%s on the rebuilt node = %q, want %q", k, got, v)
		}
	}
}

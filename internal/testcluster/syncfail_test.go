package testcluster_test

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// eioDisk returns an in-memory file system whose fsyncs fail with EIO once
// fail is set, as a dying disk's do.
func eioDisk(fail *atomic.Bool) vfs.FS {
	return syncDisk(func() error {
		if fail.Load() {
			return syscall.EIO
		}
		return nil
	})
}

// A node whose fsync fails stops (Fatal says why) rather than retry a sync
// whose outcome is unknown; the others keep acknowledging writes, and every
// write acknowledged before reads back.
func TestSyncFailure_StopsTheNodeOthersGoOn(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	var fail atomic.Bool
	const sick = 2
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, Partitions: 4,
		FS: func(i int) vfs.FS {
			if i == sick {
				return eioDisk(&fail)
			}
			return vfs.NewMem()
		},
	})
	for i := range 20 {
		testcluster.MustPut(t, c.Client(i%2), fmt.Sprintf("before%d", i), "v", client.PutOptions{})
	}
	fail.Store(true)
	for i := range 20 {
		testcluster.MustPut(t, c.Client(i%2), fmt.Sprintf("during%d", i), "v", client.PutOptions{})
	}
	select {
	case err := <-c.Node(sick).Fatal():
		t.Logf("n3 stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("n3 did not stop within 30s of its fsyncs failing")
	}
	for i := range 20 {
		for _, k := range []string{"before", "during"} {
			if v, _ := testcluster.MustGet(t, c.Client(i%2), fmt.Sprintf("%s%d", k, i), client.GetOptions{}); v != "v" {
				t.Fatalf("%s%d = %q", k, i, v)
			}
		}
	}
}

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

// eioDisk is an in-memory file system whose fsyncs fail with EIO once fail
// is set, as a dying disk's do.
type eioDisk struct {
	vfs.FS
	fail *atomic.Bool
}

func (d eioDisk) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.Create(name, cat)
	return eioFile{f, d.fail}, err
}

func (d eioDisk) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := d.FS.OpenReadWrite(name, cat, opts...)
	return eioFile{f, d.fail}, err
}

func (d eioDisk) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.ReuseForWrite(oldname, newname, cat)
	return eioFile{f, d.fail}, err
}

// Unwrap implements vfs.FS.
func (d eioDisk) Unwrap() vfs.FS { return d.FS }

type eioFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f eioFile) Sync() error {
	if f.fail.Load() {
		return syscall.EIO
	}
	return f.File.Sync()
}

func (f eioFile) SyncData() error { return f.Sync() }

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
				return eioDisk{FS: vfs.NewMem(), fail: &fail}
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

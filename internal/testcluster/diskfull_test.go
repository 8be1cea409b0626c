package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// fullDisk is an in-memory file system that can be made full: once low is
// set it reports no free space, and once enospc is set every write fails
// with ENOSPC, as a real full disk does.
type fullDisk struct {
	vfs.FS
	low, enospc *atomic.Bool
}

// GetDiskUsage implements vfs.FS: 10 GiB free, or none once low.
func (d fullDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	const total = 10 << 30
	if d.low.Load() {
		return vfs.DiskUsage{TotalBytes: total, UsedBytes: total}, nil
	}
	return vfs.DiskUsage{AvailBytes: total, TotalBytes: total}, nil
}

func (d fullDisk) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if d.enospc.Load() {
		return nil, &pathError{"create", name}
	}
	f, err := d.FS.Create(name, cat)
	return fullFile{f, d.enospc}, err
}

func (d fullDisk) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := d.FS.OpenReadWrite(name, cat, opts...)
	return fullFile{f, d.enospc}, err
}

func (d fullDisk) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if d.enospc.Load() {
		return nil, &pathError{"reuse", newname}
	}
	f, err := d.FS.ReuseForWrite(oldname, newname, cat)
	return fullFile{f, d.enospc}, err
}

// Unwrap implements vfs.FS.
func (d fullDisk) Unwrap() vfs.FS { return d.FS }

// fullFile fails writes with ENOSPC while its disk is full.
type fullFile struct {
	vfs.File
	enospc *atomic.Bool
}

func (f fullFile) Write(p []byte) (int, error) {
	if f.enospc.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.enospc.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(p, off)
}

// pathError is the ENOSPC of a file that could not be created.
type pathError struct{ op, path string }

func (e *pathError) Error() string { return fmt.Sprintf("%s %s: %v", e.op, e.path, syscall.ENOSPC) }
func (e *pathError) Unwrap() error { return syscall.ENOSPC }

// A full disk refuses every kind of write with 507 insufficient_storage,
// through every node, while reads of everything keep working; once space
// is freed, writes work again.
func TestDiskFull_RefusesWritesWith507AndKeepsServingReads(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	var low, enospc atomic.Bool
	disks := make([]vfs.FS, 3)
	for i := range disks {
		disks[i] = fullDisk{FS: vfs.NewMem(), low: &low, enospc: &enospc}
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, Partitions: 4,
		Configure: func(_ int, cfg *config.Config) { cfg.RateLimit = 1 << 20 },
		FS:        func(i int) vfs.FS { return disks[i] },
	})
	seedBadInput(t, c)

	// The disk fills up: every node's free-space check notices within its
	// refresh interval, and from then on nothing may be written at all.
	low.Store(true)
	for i := 0; i < 3; i++ {
		eventually(t, 10*time.Second, fmt.Sprintf("n%d sees its disk full", i+1), func() error {
			if c.Node(i).DB().CheckSpace() == nil {
				return errNotYet
			}
			return nil
		})
	}
	enospc.Store(true)

	writes := []struct {
		name string
		call func(ctx context.Context, cl *client.Client) error
	}{
		{"kv put", func(ctx context.Context, cl *client.Client) error {
			_, err := cl.KVPut(ctx, "k", []byte("w"), client.PutOptions{})
			return err
		}},
		{"kv delete", func(ctx context.Context, cl *client.Client) error {
			return cl.KVDelete(ctx, "k", client.DeleteOptions{})
		}},
		{"post", func(ctx context.Context, cl *client.Client) error {
			_, err := cl.Post(ctx, "general", "more", client.PostOptions{})
			return err
		}},
		{"create room", func(ctx context.Context, cl *client.Client) error {
			_, err := cl.CreateRoom(ctx, client.RoomSpec{Name: "another"})
			return err
		}},
		{"send", func(ctx context.Context, cl *client.Client) error {
			_, err := cl.Send(ctx, "jobs", "job 2", client.SendOptions{})
			return err
		}},
		{"receive", func(ctx context.Context, cl *client.Client) error {
			_, _, err := cl.Receive(ctx, "jobs", client.ReceiveOptions{})
			return err
		}},
		{"create link", func(ctx context.Context, cl *client.Client) error {
			_, err := cl.CreateLink(ctx, "https://example.org/", client.LinkOptions{})
			return err
		}},
		{"register", func(ctx context.Context, _ *client.Client) error {
			_, err := anonAt(c, 0).Register(ctx, "latecomer", "password1")
			return err
		}},
	}
	for i := 0; i < 3; i++ {
		cl := c.Client(i)
		for _, w := range writes {
			err := w.call(apiCtx(t), cl)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != 507 || ce.Code != "insufficient_storage" || ce.Retryable {
				t.Errorf("n%d %s on a full disk: %v, want 507 insufficient_storage, not retryable", i+1, w.name, err)
			}
		}
		checkSeedReadable(t, cl, fmt.Sprintf("n%d, disk full", i+1))
	}

	// Space is freed: writes work again.
	enospc.Store(false)
	low.Store(false)
	eventually(t, 10*time.Second, "writes accepted again", func() error {
		_, err := c.Client(0).KVPut(apiCtx(t), "k", []byte("w"), client.PutOptions{})
		return err
	})
	if _, err := c.Client(1).Post(apiCtx(t), "general", "back", client.PostOptions{}); err != nil {
		t.Fatalf("post after space was freed: %v", err)
	}
	c.VerifyReplicas(30 * time.Second)
}

// checkSeedReadable reads back what seedBadInput stored.
func checkSeedReadable(t *testing.T, cl *client.Client, where string) {
	t.Helper()
	ctx := apiCtx(t)
	if v, _, err := cl.KVGet(ctx, "k", client.GetOptions{}); err != nil || string(v) != "v" {
		t.Errorf("%s: kv get k = %q, %v", where, v, err)
	}
	if keys, err := cl.KVList(ctx, "", "", 10); err != nil || len(keys) == 0 {
		t.Errorf("%s: kv list = %v, %v", where, keys, err)
	}
	if ev, err := cl.History(ctx, "general", client.HistoryOptions{}); err != nil || len(ev) == 0 || ev[len(ev)-1].Text != "hello" {
		t.Errorf("%s: history = %s, %v", where, fmtSeqs(ev), err)
	}
	if m, ok, err := cl.Peek(ctx, "jobs", ""); err != nil || !ok || m.Body != "job 1" {
		t.Errorf("%s: peek = %+v %v, %v", where, m, ok, err)
	}
	if l, err := cl.LinkInfo(ctx, "home"); err != nil || l.URL != "https://example.com/" {
		t.Errorf("%s: link info = %+v, %v", where, l, err)
	}
	if rooms, err := cl.ListRooms(ctx); err != nil || len(rooms) == 0 {
		t.Errorf("%s: rooms = %v, %v", where, rooms, err)
	}
}

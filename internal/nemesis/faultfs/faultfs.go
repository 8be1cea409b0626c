// Package faultfs is a FUSE loopback file system that injects disk faults
// under a real process: it mirrors a backing directory (go-fuse's loopback
// node, wrapped) and, as told through its control socket, delays every
// write and fsync (a slow disk), fails every fsync with EIO, or fails the
// reads of table files (*.sst) with EIO. It is for tests only: the nemesis
// harness mounts it over a node's data directory (cmd/parley-faultfs).
//
// Table files are opened with direct I/O, so each of their reads reaches
// this file system instead of the kernel's page cache: a fault applies to
// the next read. Other files keep the page cache, so they can be mapped
// into memory (the search index does); writes reach this file system
// either way (FUSE writes through).
package faultfs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Faults is the set of faults in force, safe for concurrent use; the zero
// value injects nothing.
type Faults struct {
	delay     atomic.Int64 // nanoseconds added to every write and fsync
	fsyncEIO  atomic.Bool
	readEIO   atomic.Bool
	delayed   atomic.Uint64
	fsyncsBad atomic.Uint64
	readsBad  atomic.Uint64
}

// SetDelay makes every write and fsync take d longer (0: none).
func (f *Faults) SetDelay(d time.Duration) { f.delay.Store(int64(d)) }

// SetFsyncEIO makes every fsync fail with EIO (or stops it).
func (f *Faults) SetFsyncEIO(on bool) { f.fsyncEIO.Store(on) }

// SetReadEIO makes every read of a *.sst file fail with EIO (or stops it).
func (f *Faults) SetReadEIO(on bool) { f.readEIO.Store(on) }

// Heal removes every fault.
func (f *Faults) Heal() {
	f.SetDelay(0)
	f.SetFsyncEIO(false)
	f.SetReadEIO(false)
}

// Counts are how many operations the faults hit since the mount.
type Counts struct {
	Delayed, FsyncsFailed, ReadsFailed uint64
}

// Counts returns how many operations were delayed or failed so far.
func (f *Faults) Counts() Counts {
	return Counts{Delayed: f.delayed.Load(), FsyncsFailed: f.fsyncsBad.Load(), ReadsFailed: f.readsBad.Load()}
}

// String formats the counts as the control socket's "counts" answers them.
func (c Counts) String() string {
	return fmt.Sprintf("delayed=%d fsyncs_failed=%d reads_failed=%d", c.Delayed, c.FsyncsFailed, c.ReadsFailed)
}

// wait sleeps the current delay, if any, counting the operation.
func (f *Faults) wait() {
	if d := time.Duration(f.delay.Load()); d > 0 {
		f.delayed.Add(1)
		time.Sleep(d)
	}
}

// Mount mounts, at mountpoint, a loopback of backing subject to faults; name
// is the mount's source (as /proc/self/mountinfo shows it, so leftovers can
// be found). The caller unmounts it (Server.Unmount) and waits for it
// (Server.Wait).
func Mount(backing, mountpoint, name string, faults *Faults) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	root := &fs.LoopbackRoot{Path: backing, Dev: st.Dev}
	root.RootNode = &node{LoopbackNode: &fs.LoopbackNode{RootData: root}, faults: faults}
	entry := time.Second
	srv, err := fs.Mount(mountpoint, root.RootNode, &fs.Options{
		EntryTimeout: &entry, AttrTimeout: &entry,
		MountOptions: fuse.MountOptions{FsName: name, Name: "faultfs", DisableXAttrs: true, DirectMount: true},
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s at %s: %w", backing, mountpoint, err)
	}
	return srv, nil
}

// node is a loopback node whose files inject the faults.
type node struct {
	*fs.LoopbackNode
	faults *Faults
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
)

// WrapChild implements fs.NodeWrapChilder: every node below the root is a
// node too.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, faults: n.faults}
	}
	return ops
}

// Open implements fs.NodeOpener.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	ff := n.wrap(fh, n.Path(nil))
	return ff, fl | ff.openFlags(), 0
}

// Create implements fs.NodeCreater.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	ff := n.wrap(fh, filepath.Join(n.Path(nil), name))
	return in, ff, fl | ff.openFlags(), 0
}

// wrap wraps a loopback file handle of the file at path.
func (n *node) wrap(fh fs.FileHandle, path string) *file {
	// The loopback's Open and Create return *fs.LoopbackFile.
	return &file{LoopbackFile: fh.(*fs.LoopbackFile), faults: n.faults, table: strings.HasSuffix(path, ".sst")}
}

// openFlags are the FUSE open flags of f: direct I/O for a table.
func (f *file) openFlags() uint32 {
	if f.table {
		return fuse.FOPEN_DIRECT_IO
	}
	return 0
}

// file is a loopback file handle that injects the faults.
type file struct {
	*fs.LoopbackFile
	faults *Faults
	table  bool // a *.sst file
}

// Read implements fs.FileReader.
func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if f.table && f.faults.readEIO.Load() {
		f.faults.readsBad.Add(1)
		return nil, syscall.EIO
	}
	return f.LoopbackFile.Read(ctx, buf, off)
}

// Write implements fs.FileWriter.
func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f.faults.wait()
	return f.LoopbackFile.Write(ctx, data, off)
}

// Writev implements fs.FileWritever.
func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	f.faults.wait()
	return f.LoopbackFile.Writev(ctx, data, off)
}

// Fsync implements fs.FileFsyncer: fsync and fdatasync.
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f.faults.wait()
	if f.faults.fsyncEIO.Load() {
		f.faults.fsyncsBad.Add(1)
		return syscall.EIO
	}
	return f.LoopbackFile.Fsync(ctx, flags)
}

// PassthroughFd hides the loopback's descriptor, so the kernel never
// bypasses this file system (FUSE passthrough) and every fault applies.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

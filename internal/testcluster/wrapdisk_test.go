package testcluster_test

import "github.com/cockroachdb/pebble/v2/vfs"

// wrapDisk is a file system whose files opened for writing (the WAL, new
// tables, the manifest) are wrapped by wrap, the hook of the sick disks
// the tests build (a failing fsync, a slow one).
type wrapDisk struct {
	vfs.FS
	wrap func(vfs.File) vfs.File
}

func (d wrapDisk) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.Create(name, cat)
	if err != nil {
		return nil, err
	}
	return d.wrap(f), nil
}

func (d wrapDisk) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := d.FS.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return d.wrap(f), nil
}

func (d wrapDisk) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return d.wrap(f), nil
}

// Unwrap implements vfs.FS.
func (d wrapDisk) Unwrap() vfs.FS { return d.FS }

// syncDisk returns an in-memory file system whose fsyncs call before first
// and fail with its error, if any.
func syncDisk(before func() error) vfs.FS {
	return wrapDisk{FS: vfs.NewMem(), wrap: func(f vfs.File) vfs.File { return syncHookFile{f, before} }}
}

// syncHookFile calls before ahead of every fsync.
type syncHookFile struct {
	vfs.File
	before func() error
}

func (f syncHookFile) Sync() error {
	if err := f.before(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f syncHookFile) SyncData() error { return f.Sync() }

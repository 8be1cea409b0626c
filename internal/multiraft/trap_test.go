package multiraft

import (
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncTrap is a node's file system in the interaction tests. Armed, it
// simulates a power loss at the next sync of a WAL file: before the sync
// runs it calls spring, which cuts the node off the network (so that
// nothing it sends after that instant counts), records what it had sent
// and takes a crash clone of the file system: exactly what was synced
// before. The sync then runs on the original, which is abandoned.
type syncTrap struct {
	*vfs.MemFS
	mu     sync.Mutex
	spring func() // nil when disarmed; runs once
}

type trapFile struct {
	vfs.File
	trap *syncTrap
}

// arm makes the next WAL sync call spring first.
func (t *syncTrap) arm(spring func()) {
	t.mu.Lock()
	t.spring = spring
	t.mu.Unlock()
}

// sprung runs the armed spring, if any, once.
func (t *syncTrap) sprung() {
	t.mu.Lock()
	spring := t.spring
	t.spring = nil
	t.mu.Unlock()
	if spring != nil {
		spring()
	}
}

func (t *syncTrap) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &trapFile{File: f, trap: t}, nil
}

func (t *syncTrap) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := t.MemFS.Create(name, c)
	return t.wrap(name, f, err)
}

func (t *syncTrap) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := t.MemFS.ReuseForWrite(o, n, c)
	return t.wrap(n, f, err)
}

func (t *syncTrap) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := t.MemFS.OpenReadWrite(name, c, opts...)
	return t.wrap(name, f, err)
}

func (f *trapFile) Sync() error {
	f.trap.sprung()
	return f.File.Sync()
}

func (f *trapFile) SyncData() error {
	f.trap.sprung()
	return f.File.SyncData()
}

func (f *trapFile) SyncTo(n int64) (bool, error) {
	f.trap.sprung()
	return f.File.SyncTo(n)
}

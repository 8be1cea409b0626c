package multiraft

import (
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

// fs returns the file system to open the node's store on.
func (t *syncTrap) fs() vfs.FS { return &walFS{FS: t.MemFS, before: t.sprung} }

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

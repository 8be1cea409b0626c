package partition

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// Read sessions: a remote read of more than one call reads one snapshot of
// the replica, held here between its calls.
const (
	// sessionIdle closes a session not used for that long: its reader went
	// away without releasing it (it releases when its read function
	// returns, and a read lasts at most its request's timeout).
	sessionIdle = 5 * time.Second
	// maxSessions bounds the snapshots held at once; past it a read that
	// asks to hold one fails as unavailable and is tried again.
	maxSessions = 1024
)

// sessions holds the snapshots of remote reads between their calls.
type sessions struct {
	mu     sync.Mutex
	m      map[uint64]*session
	closed bool
}

// session is one held snapshot.
type session struct {
	snap    *localSnapshot
	applied uint64
	uses    int         // reads running on it
	gone    bool        // expired or released: close once unused
	timer   *time.Timer // expires it when idle
}

func newSessions() *sessions { return &sessions{m: map[uint64]*session{}} }

// add holds snap as a new session and returns its id (random, so an id a
// reader kept across this node's restart names nothing).
func (ss *sessions) add(snap *localSnapshot, applied uint64) (uint64, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed || len(ss.m) >= maxSessions {
		return 0, errs.New(errs.Unavailable, "too many reads in progress on this node")
	}
	id := rand.Uint64()
	for id == 0 || ss.m[id] != nil {
		id = rand.Uint64()
	}
	s := &session{snap: snap, applied: applied}
	s.timer = time.AfterFunc(sessionIdle, func() { ss.drop(id, s) })
	ss.m[id] = s
	return id, nil
}

// read runs fn on session id's snapshot, which must be of group; it fails
// with errSessionGone when there is no such session (expired, released, or
// from before a restart).
func (ss *sessions) read(id, group uint64, fn func(snap *localSnapshot, applied uint64)) error {
	ss.mu.Lock()
	s := ss.m[id]
	if s == nil || s.snap.group != group {
		ss.mu.Unlock()
		return errSessionGone
	}
	s.uses++
	s.timer.Reset(sessionIdle)
	ss.mu.Unlock()

	fn(s.snap, s.applied)

	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.uses--; s.uses == 0 && s.gone {
		s.snap.close()
	}
	return nil
}

// release drops session id, if it exists.
func (ss *sessions) release(id uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.m[id]; s != nil {
		ss.dropLocked(id, s)
	}
}

// drop drops session id if it is still s (its timer fired).
func (ss *sessions) drop(id uint64, s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m[id] == s {
		ss.dropLocked(id, s)
	}
}

// dropLocked forgets a session and closes its snapshot, now or when its
// last read ends. ss.mu is held.
func (ss *sessions) dropLocked(id uint64, s *session) {
	delete(ss.m, id)
	s.timer.Stop()
	s.gone = true
	if s.uses == 0 {
		s.snap.close()
	}
}

// closeAll drops every session and refuses new ones.
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	for id, s := range ss.m {
		ss.dropLocked(id, s)
	}
}

// count returns the sessions held (tests).
func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

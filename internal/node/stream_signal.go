package node

import (
	"sync"

	"github.com/parley-chat/parley/internal/chat"
)

// roomSignals tells room feeds when a room changed on this node: the
// partition mux records every applied chat command that adds a room event
// (a post, join or leave) or deletes a room, on the driver goroutine, and
// applied, called once the engine reports those entries durable and visible
// to reads, closes the channels the room's waiters hold. A waiter takes the
// channel (changed) before it reads the state, so an event applied between
// the two is never missed: it is either in what the waiter reads or wakes it.
//
// Like queueNotifier it sees only partitions with a replica here; feeds
// also re-read the state every second, which covers a replica brought up to
// date by a snapshot (it applies no commands).
type roomSignals struct {
	mu      sync.Mutex
	pending map[uint64][]roomNote    // partition -> applied, not yet reported visible
	waits   map[string]chan struct{} // room -> closed at its next visible change
}

// roomNote is one applied command that changed a room.
type roomNote struct {
	room  string
	index uint64
}

func newRoomSignals() *roomSignals {
	return &roomSignals{pending: map[uint64][]roomNote{}, waits: map[string]chan struct{}{}}
}

// changedRoom returns the room a chat command changes the events or
// existence of, and false for every other command.
func changedRoom(cmd []byte) (string, bool) {
	if len(cmd) < 2 || cmd[0] != chat.Tag {
		return "", false
	}
	c, err := chat.DecodeCommand(cmd)
	if err != nil {
		return "", false
	}
	switch c := c.(type) {
	case chat.Post:
		return c.Room, true
	case chat.Join:
		return c.Room, true
	case chat.Leave:
		return c.Room, true
	case chat.DeleteRoom:
		return c.Room, true
	}
	return "", false
}

// record notes that partition p applied, at index, a command changing room.
// It runs on the driver goroutine, before the entry is visible.
func (rs *roomSignals) record(p uint64, room string, index uint64) {
	rs.mu.Lock()
	rs.pending[p] = append(rs.pending[p], roomNote{room: room, index: index})
	rs.mu.Unlock()
}

// applied wakes the waiters of every room changed by partition p's
// commands up to index applied. It runs on the driver goroutine and does
// not block.
func (rs *roomSignals) applied(p, applied uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	notes := rs.pending[p]
	if len(notes) == 0 {
		return
	}
	i := 0
	for ; i < len(notes) && notes[i].index <= applied; i++ {
		if ch, ok := rs.waits[notes[i].room]; ok {
			close(ch)
			delete(rs.waits, notes[i].room)
		}
	}
	if i == len(notes) {
		delete(rs.pending, p)
	} else {
		rs.pending[p] = notes[i:]
	}
}

// changed returns a channel closed at room's next visible change. Take it
// before reading the room's state.
func (rs *roomSignals) changed(room string) <-chan struct{} {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ch, ok := rs.waits[room]
	if !ok {
		ch = make(chan struct{})
		rs.waits[room] = ch
	}
	return ch
}

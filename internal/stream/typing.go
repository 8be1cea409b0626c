package stream

import (
	"sync"
	"time"
)

// TypingInterval is the least time between two typing frames of one user in
// one room; more frequent ones are dropped.
const TypingInterval = time.Second

// typingLimit admits one typing frame per user and room per
// TypingInterval. It is per node: a user typing through two nodes at once
// may reach the room twice a second.
type typingLimit struct {
	mu   sync.Mutex
	last map[string]time.Time // user \x00 room -> last admitted
}

// maxTypingEntries bounds the limit's memory; past it, stale entries are
// dropped.
const maxTypingEntries = 4096

func (l *typingLimit) allow(user, room string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	k := user + "\x00" + room
	if t, ok := l.last[k]; ok && now.Sub(t) < TypingInterval {
		return false
	}
	if len(l.last) >= maxTypingEntries {
		for k, t := range l.last {
			if now.Sub(t) >= TypingInterval {
				delete(l.last, k)
			}
		}
	}
	l.last[k] = now
	return true
}

// Typing admits a typing frame from s for room: s must be subscribed to the
// room, and its user may send one per TypingInterval per room. It returns
// the frame to fan out to the room's subscribers (SendRoom, here and on
// the other nodes), or nil when the frame is dropped. Typing frames are
// never stored and have no seq.
func (h *Hub) Typing(s *Subscriber, roomName string) []byte {
	h.mu.Lock()
	_, subscribed := s.rooms[roomName]
	h.mu.Unlock()
	if !subscribed || IsInbox(roomName) || !h.typing.allow(s.user, roomName, time.Now()) {
		return nil
	}
	return EncodeTyping(roomName, s.user)
}

//go:build failpoints

package clock

import (
	"os"
	"strings"
	"sync"
	"time"
)

// offsetReread is how stale the offset may be.
const offsetReread = 50 * time.Millisecond

var offset struct {
	mu     sync.Mutex
	readAt time.Time
	value  time.Duration
}

// wallClock reads the wall clock plus the failpoint's offset, without a
// monotonic reading.
func wallClock() time.Time {
	now := time.Now()
	return now.Round(0).Add(currentOffset(now))
}

// currentOffset returns the offset in the file named by OffsetFileEnv.
func currentOffset(now time.Time) time.Duration {
	path := os.Getenv(OffsetFileEnv)
	if path == "" {
		return 0
	}
	offset.mu.Lock()
	defer offset.mu.Unlock()
	if now.Sub(offset.readAt) < offsetReread && !offset.readAt.IsZero() {
		return offset.value
	}
	offset.readAt = now
	offset.value = 0
	if b, err := os.ReadFile(path); err == nil {
		if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
			offset.value = d
		}
	}
	return offset.value
}

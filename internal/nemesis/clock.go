package nemesis

import (
	"os"
	"time"
)

// clockFile is the file the node's failpoint clock reads its offset from
// (internal/clock, failpoints build): beside its log, outside its data
// directory, so it survives a data directory being replaced.
func (n *Node) clockFile() string { return n.LogPath + ".clock-offset" }

// SetClockOffset moves the node's wall clock by d from real time (0 sets
// it right), as a clock stepped by hand or by a broken time source would:
// the running process sees it within 50 ms, a restarted one from its start.
func (n *Node) SetClockOffset(d time.Duration) error {
	if d == 0 {
		if err := os.Remove(n.clockFile()); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(n.clockFile(), []byte(d.String()+"\n"), 0o644)
}

package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// TearWAL writes, right after the last record of n's newest Pebble WAL, the
// first part of a record that was never finished — a random chunk header
// and body, cut short — as a power cut in the middle of a write leaves it.
// The node must be stopped (Kill). It returns the file and the offset of
// the torn bytes.
func (n *Node) TearWAL(rng *rand.Rand) (string, int64, error) {
	if n.Running() {
		return "", 0, errors.New("tear the WAL of a stopped node")
	}
	logs, err := filepath.Glob(filepath.Join(n.DataDir, "*.log"))
	if err != nil || len(logs) == 0 {
		return "", 0, fmt.Errorf("no WAL in %s (%v)", n.DataDir, err)
	}
	slices.Sort(logs) // numbered: the newest last
	name := logs[len(logs)-1]
	b, err := os.ReadFile(name)
	if err != nil {
		return "", 0, err
	}
	// Pebble preallocates its WALs: the written part ends at the last
	// byte that is not zero.
	end := int64(len(b))
	for end > 0 && b[end-1] == 0 {
		end--
	}
	torn := make([]byte, 7+rng.IntN(200))
	for i := range torn {
		torn[i] = byte(rng.Uint32())
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if _, err := f.WriteAt(torn, end); err != nil {
		return "", 0, err
	}
	return filepath.Base(name), end, f.Sync()
}

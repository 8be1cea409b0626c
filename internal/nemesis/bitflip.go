package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// FlipBit flips one random bit in the first two thirds (the data blocks,
// before the index and footer) of n's largest Pebble table, as bit rot or
// a bad sector returned as data would. The node must be stopped (Kill).
// It returns the file and the offset of the flipped byte.
func (n *Node) FlipBit(rng *rand.Rand) (string, int64, error) {
	if n.Running() {
		return "", 0, errors.New("flip a bit of a stopped node")
	}
	tables, err := filepath.Glob(filepath.Join(n.DataDir, "*.sst"))
	if err != nil || len(tables) == 0 {
		return "", 0, fmt.Errorf("no table in %s (%v)", n.DataDir, err)
	}
	var name string
	var size int64
	for _, t := range tables {
		if st, err := os.Stat(t); err == nil && st.Size() > size {
			name, size = t, st.Size()
		}
	}
	if size < 3 {
		return "", 0, fmt.Errorf("the tables in %s are empty", n.DataDir)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	off := rng.Int64N(size * 2 / 3)
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return "", 0, err
	}
	b[0] ^= 1 << rng.IntN(8)
	if _, err := f.WriteAt(b, off); err != nil {
		return "", 0, err
	}
	return filepath.Base(name), off, f.Sync()
}

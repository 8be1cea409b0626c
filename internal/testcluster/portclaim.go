package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Test binaries run in parallel (go test ./... runs packages at once), and
// each checks a port free (FreeAddr) some time before its node listens on
// it: another binary checking the same port in between would get it too,
// and one of the two nodes fails to start ("address already in use", seen
// for gossip ports). So a process claims every port it hands out with an
// exclusive flock on a file named after the port, under the system's
// temporary directory, and holds it until it exits (the kernel drops the
// lock then, however the process ends); ports another process holds are
// skipped.

var (
	claimMu  sync.Mutex
	claimed  = map[uint32]*os.File{} // open to keep their locks
	claimDir = filepath.Join(os.TempDir(), "parley-test-ports")
)

// claimPort reports whether this process holds the claim of port (and so
// of port+1, which FreeAddr never hands out): it took it
// now, or before. A port it cannot claim (another process holds it) is not
// to be used; when the claim files cannot be made at all, every port is
// claimable, as before claims existed.
func claimPort(port uint32) bool {
	claimMu.Lock()
	defer claimMu.Unlock()
	if _, ok := claimed[port]; ok {
		return true
	}
	if err := os.MkdirAll(claimDir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(claimDir, fmt.Sprintf("%d.lock", port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	claimed[port] = f
	return true
}

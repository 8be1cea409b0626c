package testcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A port whose claim another process holds is never handed out: FreeAddr
// skips it although nothing listens there yet. (flock locks belong to an
// open file, so a second open of the claim file here stands for another
// process.)
func TestFreeAddr_SkipsAPortAnotherProcessClaimed(t *testing.T) {
	next := freeLo + ((freePort.Load() + 2) % (freeHi - freeLo))
	if err := os.MkdirAll(claimDir, 0o777); err != nil {
		t.Skipf("no claim directory: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(claimDir, fmt.Sprintf("%d.lock", next)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Skipf("no claim file: %v", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("port %d is claimed by another test binary running now: %v", next, err)
	}
	if claimPort(next) {
		t.Fatalf("claimPort(%d) = true while another open file holds its claim", next)
	}
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	if p, _ := strconv.Atoi(port); uint32(p) == next {
		t.Fatalf("FreeAddr handed out port %d, claimed elsewhere", next)
	}
	addr := FreeAddr(t)
	_, port, _ = net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	if !claimPort(uint32(p)) {
		t.Fatalf("FreeAddr handed out %s without holding its claim", addr)
	}
}

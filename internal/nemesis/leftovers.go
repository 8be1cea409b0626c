package nemesis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ownerDir holds one file per run in progress, named after the run number
// and holding its process id. /run is cleared at boot, as namespaces are.
const ownerDir = "/run/parley-nemesis"

// claimOwner creates run r's owner file; it fails if the run is taken.
func claimOwner(r int) error {
	if err := os.MkdirAll(ownerDir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(ownerFile(r), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	return errors.Join(err, f.Close())
}

func ownerFile(r int) string { return filepath.Join(ownerDir, strconv.Itoa(r)) }

func releaseOwner(r int) { _ = os.Remove(ownerFile(r)) }

// ownerAlive reports whether run r's owner file names a live process.
func ownerAlive(r int) bool {
	b, err := os.ReadFile(ownerFile(r))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

// Leftovers removes what earlier runs left behind when their process died
// before its cleanup: processes in their namespaces, the namespaces, the
// root port, tmpfs mounts. Runs whose owner is alive are left alone.
func Leftovers(t testing.TB) {
	t.Helper()
	out, err := run("ip", "netns", "list")
	if err != nil {
		t.Logf("nemesis: listing namespaces: %v", err)
		return
	}
	dead := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		r, ok := runOf(f[0])
		if !ok || ownerAlive(r) {
			continue
		}
		dead[r] = true
		killNamespace(f[0])
		if _, err := run("ip", "netns", "del", f[0]); err != nil {
			t.Logf("nemesis: removing leftover %s: %v", f[0], err)
		}
	}
	entries, _ := os.ReadDir(ownerDir)
	for _, e := range entries {
		if r, err := strconv.Atoi(e.Name()); err == nil && !ownerAlive(r) {
			dead[r] = true
		}
	}
	for r := range dead {
		_, _ = run("ip", "link", "del", fmt.Sprintf("%s%d", Prefix, r))
		unmountRun(r)
		releaseOwner(r)
		t.Logf("nemesis: removed the leftovers of run %d", r)
	}
}

// runOf parses the run number out of a namespace or mount source named
// pnem-R-....
func runOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix+"-")
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, "-")
	r, err := strconv.Atoi(num)
	return r, err == nil
}

// killNamespace kills (SIGKILL) every process in namespace ns: only the
// harness starts processes there.
func killNamespace(ns string) {
	out, err := run("ip", "netns", "pids", ns)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

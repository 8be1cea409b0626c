package nemesis

import (
	"os"
	"os/exec"
	"testing"
)

// Require skips t, saying why, unless the harness can run here: root, ip(8)
// with network namespaces, iptables and mount.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("nemesis tests need root: they create network namespaces, iptables rules and tmpfs mounts")
	}
	for _, tool := range []string{"ip", "iptables", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("nemesis tests need %s: %v", tool, err)
		}
	}
	if _, err := run("ip", "netns", "list"); err != nil {
		t.Skipf("nemesis tests need network namespaces (ip netns): %v", err)
	}
}

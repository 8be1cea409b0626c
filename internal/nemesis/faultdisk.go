package nemesis

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/parley-chat/parley/internal/nemesis/faultfs"
)

// faultDisk is a node's fault-injecting file system: a parley-faultfs
// process mirroring a directory of the node's tmpfs at its data directory.
type faultDisk struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	control string // its control socket
}

// FUSEAvailable reports why a fault-injecting file system cannot be
// mounted here (nil when it can): it needs /dev/fuse.
func FUSEAvailable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("faulty disks need FUSE: %w", err)
	}
	return f.Close()
}

// mountFaultDisk mounts, at the data directory of n (on the tmpfs mnt), a
// fault-injecting loopback of mnt/backing, served by a parley-faultfs
// process of its own (named after the node's tmpfs, so leftovers are
// found), and waits until it is mounted.
func mountFaultDisk(n *Node, mnt, source string) error {
	bin, err := FaultFSBinary()
	if err != nil {
		return err
	}
	backing := filepath.Join(mnt, "backing")
	for _, d := range []string{backing, n.DataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	fd := &faultDisk{control: filepath.Join(mnt, "faultfs.sock"), exited: make(chan struct{})}
	logf, err := os.OpenFile(strings.TrimSuffix(n.LogPath, ".log")+"-faultfs.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fd.cmd = exec.Command(bin, "-backing", backing, "-mount", n.DataDir, "-control", fd.control, "-name", source)
	fd.cmd.Stderr = logf
	fd.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := fd.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := fd.cmd.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	go func() { _ = fd.cmd.Wait(); close(fd.exited) }()
	if strings.TrimSpace(line) != "mounted" {
		fd.stop()
		return fmt.Errorf("parley-faultfs for %s did not mount (see %s)", n.ID, logf.Name())
	}
	n.disk = fd
	return nil
}

// stop asks the file system to unmount itself and waits for it (killing it
// after 5 s).
func (fd *faultDisk) stop() {
	_ = fd.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-fd.exited:
	case <-time.After(5 * time.Second):
		_ = fd.cmd.Process.Kill()
		<-fd.exited
	}
}

// DiskFault sends one command to n's fault-injecting file system (see
// faultfs: "delay 400ms", "fsync-eio on", "read-eio on", "heal",
// "counts") and returns its counts of delayed and failed operations.
func (n *Node) DiskFault(cmd string) (faultfs.Counts, error) {
	if n.disk == nil {
		return faultfs.Counts{}, errors.New(n.ID + " has no fault-injecting disk (Options.FaultDisks)")
	}
	return faultfs.Send(n.disk.control, cmd)
}

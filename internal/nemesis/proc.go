package nemesis

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/clock"
)

// Ports every node listens on, on its own address (gossip is the cluster
// port + 1).
const (
	HTTPPort    = 7070
	ClusterPort = 7071
)

// Node is one `parley serve` process in its host's namespace. Its data
// directory lives on a tmpfs of the cluster's disk size.
type Node struct {
	// ID is the node's id, n1, n2, ...
	ID string
	// Host is the namespace it runs in.
	Host *Host
	// DataDir is its data directory.
	DataDir string
	// LogPath is the file its standard output and error go to.
	LogPath string

	bin  string
	args []string   // serve flags, without --join (given once, at the first start)
	disk *faultDisk // its fault-injecting file system (Options.FaultDisks), or nil

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// HTTPAddr returns the node's HTTP host:port.
func (n *Node) HTTPAddr() string { return fmt.Sprintf("%s:%d", n.Host.Addr, HTTPPort) }

// ClusterAddr returns the node's internal host:port.
func (n *Node) ClusterAddr() string { return fmt.Sprintf("%s:%d", n.Host.Addr, ClusterPort) }

// Client returns a client of the node's HTTP API sending token ("" none).
func (n *Node) Client(token string) *client.Client {
	return client.New("http://"+n.HTTPAddr(), client.WithToken(token))
}

// start starts the process with extra flags after the node's own and
// extra environment variables (NAME=value).
func (n *Node) start(env []string, extra ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("%s is running", n.ID)
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append([]string{"netns", "exec", n.Host.NS, n.bin}, append(append([]string{}, n.args...), extra...)...)
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(os.Environ(), clock.OffsetFileEnv+"="+n.clockFile()), env...)
	// The node dies with the test process, even one killed before its
	// cleanup ran.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited, n.paused = cmd, exited, false
	return nil
}

// Start starts a stopped node from its data directory.
func (n *Node) Start() error { return n.start(nil) }

// StartWith starts a stopped node with extra flags after its own, e.g.
// --join to point it at another cluster.
func (n *Node) StartWith(extra ...string) error { return n.start(nil, extra...) }

// Running reports whether the process is alive (paused counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (n *Node) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// Pause freezes the process with SIGSTOP: it keeps its sockets and wakes,
// its clock jumped, on Resume.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *Node) signal(sig syscall.Signal, paused bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("%s is not running", n.ID)
	}
	n.paused = paused
	return n.cmd.Process.Signal(sig)
}

// Exited returns a channel closed when the current process ends (nil when
// none runs).
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil
	}
	return n.exited
}

// CopyData copies the data directory, as it is on disk now, to dst (a new
// directory). Copy a stopped node's: a running node's files change.
func (n *Node) CopyData(dst string) error {
	if _, err := run("cp", "-a", n.DataDir, dst); err != nil {
		return err
	}
	return nil
}

// ReplaceData replaces the data directory with a copy of src (made by
// CopyData). The node must be stopped.
func (n *Node) ReplaceData(src string) error {
	if n.Running() {
		return errors.New("replace the data directory of a stopped node")
	}
	if err := os.RemoveAll(n.DataDir); err != nil {
		return err
	}
	_, err := run("cp", "-a", src, n.DataDir)
	return err
}

// Log returns the last max bytes of the node's log.
func (n *Node) Log(maxBytes int) string {
	b, err := os.ReadFile(n.LogPath)
	if err != nil {
		return err.Error()
	}
	return "--- " + filepath.Base(n.LogPath) + ":\n" + string(b[max(0, len(b)-maxBytes):])
}

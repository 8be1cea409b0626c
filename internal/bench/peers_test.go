package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// This file starts the peer servers the rabbitmq and nats tests run
// against, from the binaries of the Debian packages; the tests skip when
// they are not installed.

// freePort returns a loopback TCP port nobody listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess starts cmd in its own process group, logging to dir/name.log,
// and stops the whole group when the test ends.
func startProcess(t *testing.T, dir, name string, cmd *exec.Cmd) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logf.Close()
	})
}

// lookPath returns the path of the first of names found, or skips.
func lookPath(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		if _, err := os.Stat(n); err == nil {
			return n
		}
	}
	t.Skipf("%s not installed (apt-get install %s)", names[0], pkg)
	return ""
}

// startRabbitMQ starts a one-node RabbitMQ with its own epmd, cookie and
// data under a temporary directory, and returns its AMQP URL.
func startRabbitMQ(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a RabbitMQ node")
	}
	server := lookPath(t, "rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmq-server")
	epmd := lookPath(t, "rabbitmq-server", "epmd", "/usr/lib/erlang/bin/epmd")
	dir := t.TempDir()
	epmdPort, amqpPort, distPort := freePort(t), freePort(t), freePort(t)
	if err := os.WriteFile(filepath.Join(dir, ".erlang.cookie"), []byte("PARLEYBENCHTEST"), 0o400); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"enabled_plugins": "[].\n", "rabbitmq.conf": "", "rabbitmq-env.conf": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+dir, fmt.Sprintf("ERL_EPMD_PORT=%d", epmdPort))
	e := exec.Command(epmd, "-port", fmt.Sprint(epmdPort))
	e.Env = env
	startProcess(t, dir, "epmd", e)
	cmd := exec.Command(server)
	cmd.Env = append(env,
		"RABBITMQ_NODENAME=bench-test@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		fmt.Sprintf("RABBITMQ_NODE_PORT=%d", amqpPort),
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", distPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_LOGS=-",
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "pid"),
	)
	startProcess(t, dir, "rabbitmq", cmd)
	url := fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", amqpPort)
	poll.Until(t, 3*time.Minute, "rabbitmq (log in "+dir+")", func() error {
		c, err := rmqDial(url)
		if err == nil {
			_ = c.Close()
		}
		return err
	})
	return url
}

// startNATS starts a one-server NATS with JetStream under a temporary
// directory and returns its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	server := lookPath(t, "nats-server", "nats-server")
	dir := t.TempDir()
	port := freePort(t)
	cmd := exec.Command(server, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", dir, "-n", "bench-test")
	startProcess(t, dir, "nats", cmd)
	poll.Until(t, time.Minute, "nats-server", func() error {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err
	})
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// runFor runs w with workers for n operations under a generous deadline.
func runFor(t *testing.T, w Workload, workers, n int) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, w, Options{Workers: workers, Requests: n, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

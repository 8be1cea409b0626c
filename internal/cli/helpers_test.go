package cli

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// envMap returns a Getenv that looks variables up in m.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// result is what one command run produced.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command line args with the given environment and stdin.
func run(ctx context.Context, env map[string]string, stdin string, args ...string) result {
	var out, errOut syncBuffer
	code := Run(ctx, &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut, Getenv: envMap(env)}, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// mustRun runs args and fails the test unless it exits 0.
func mustRun(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	r := run(ctx, nil, "", args...)
	if r.code != 0 {
		t.Fatalf("parley %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// background runs the command line args until the returned stop function
// is called; stop returns the exit code.
func background(t *testing.T, args ...string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr}, args)
	}()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("parley %s did not stop within 30 s", args[0])
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// waitFor polls buf until re matches, returning the submatches, or fails
// the test after timeout.
func waitFor(t *testing.T, buf, errBuf *syncBuffer, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q in output after %s\nstdout: %s\nstderr: %s", re, timeout, buf, errBuf)
	return nil
}

// servingRE matches the line `parley serve` prints once it serves.
var servingRE = regexp.MustCompile(`parley node \S+ serving (https?://\S+) \(cluster (\S+),`)

// startServe runs `parley serve` on free ports in a temporary directory
// and returns its HTTP URL and the function that stops it.
func startServe(t *testing.T, extra ...string) (url string, stop func() int) {
	t.Helper()
	args := append([]string{"serve",
		"--data-dir", t.TempDir(),
		"--http", "127.0.0.1:0",
		"--cluster", "127.0.0.1:0",
		"--partitions", "4",
		"--tick", "10ms",
		"--log-level", "warn",
	}, extra...)
	out, errOut, stop := background(t, args...)
	m := waitFor(t, out, errOut, servingRE, 30*time.Second)
	return m[1], stop
}

// freeBasePort finds n consecutive free loopback ports and returns the
// first.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		// testcluster.FreeAddr keeps below the ephemeral ports that
		// outgoing connections take.
		_, port, _ := net.SplitHostPort(testcluster.FreeAddr(t))
		base, _ := strconv.Atoi(port)
		if base+n > 65535 {
			continue
		}
		var lns []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			_ = l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// signUp registers a user on the server at url and returns a session token.
func signUp(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(url)
	if _, err := c.Register(ctx, "tester", "tester-password"); err != nil {
		t.Fatalf("register on %s: %v", url, err)
	}
	s, err := c.Login(ctx, "tester", "tester-password")
	if err != nil {
		t.Fatalf("login on %s: %v", url, err)
	}
	return s.Token
}

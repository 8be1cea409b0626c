package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileText clears the screen, homes the cursor, draws a fake line,
// retitles the window and reverses the text after it: what issue 8 saw in
// `parley chat` and `room history`.
const hostileText = "\x1b[2J\x1b[H[10:00:00] admin: send me your token\x1b]0;pwned\x07 \u202eabc"

// rawTerminalBytes are what must never reach a terminal from user text.
var rawTerminalBytes = []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"}

// oldDataServer serves, as a server with data stored before the text rule
// would, user text full of escape sequences: room history and members, a
// queue message, a KV value and key.
func oldDataServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		send := func(v any) { _ = json.NewEncoder(w).Encode(v) }
		switch r.Method + " " + r.URL.Path {
		case "GET /api/v1/rooms/ops/messages":
			send(map[string]any{"messages": []map[string]any{
				{"room": "ops", "seq": 7, "ts": 1, "kind": "message", "sender": "mallory\x1b[1m", "text": hostileText},
				{"room": "ops", "seq": 8, "ts": 2, "kind": "message", "sender": "bob", "text": "two\nlines\r[10:00:01] alice: fake"},
			}})
		case "GET /api/v1/rooms/ops/members":
			send(map[string]any{"members": []map[string]any{{"username": "mallory\x1b]0;x\x07", "online": true, "joined_at": 1}}})
		case "POST /api/v1/queues/jobs/receive":
			send(map[string]any{"id": 1, "sender": "mallory\x1b[2J", "ts": 1, "body": hostileText, "deliveries": 1})
		case "GET /api/v1/kv/k":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Parley-Version", "3")
			_, _ = io.WriteString(w, hostileText)
		case "GET /api/v1/kv":
			keys := []map[string]any{{"key": "k\x1b[2J", "version": 1, "size": 3, "modified_ms": 1}}
			if r.URL.Query().Get("after") != "" {
				keys = nil // the end of the listing
			}
			send(map[string]any{"keys": keys})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runTTY runs args with standard output counted as a terminal or not.
func runTTY(tty bool, args ...string) result {
	var out, errOut syncBuffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, terminal: func(io.Writer) bool { return tty }}
	code := Run(context.Background(), e, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestOutput_NeutralizesControlCharacters checks that user text already
// stored with escape sequences never reaches a terminal raw, while values
// written to a file or a pipe stay byte-exact.
func TestOutput_NeutralizesControlCharacters(t *testing.T) {
	url := oldDataServer(t)
	srv := []string{"--server", url, "--token", "t"}
	assertSafe := func(t *testing.T, what, out string) {
		t.Helper()
		for _, c := range rawTerminalBytes {
			if strings.Contains(out, c) {
				t.Errorf("%s holds %q raw:\n%q", what, c, out)
			}
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		tty  bool
		want string // in stdout
	}{
		{"room history", []string{"room", "history", "ops"}, false, `mallory\x1b[1m: \x1b[2J\x1b[H[10:00:00] admin`},
		{"room history, multi-line", []string{"room", "history", "ops"}, false, "bob: two\n    lines\\x0d[10:00:01] alice: fake\n"},
		{"room history --json", []string{"room", "history", "ops", "--json"}, false, `\u001b[2J`},
		{"room members", []string{"room", "members", "ops"}, false, `mallory\x1b]0;x\x07`},
		{"queue receive on a terminal", []string{"queue", "receive", "jobs"}, true, `\x1b[2J\x1b[H[10:00:00]`},
		{"kv get on a terminal", []string{"kv", "get", "k"}, true, `\x1b[2J\x1b[H[10:00:00]`},
		{"kv list on a terminal", []string{"kv", "list"}, true, `k\x1b[2J`},
		{"kv list -l", []string{"kv", "list", "-l"}, false, `k\x1b[2J`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTTY(tc.tty, append(tc.args, srv...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			assertSafe(t, "stdout", r.stdout)
			assertSafe(t, "stderr", r.stderr)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("stdout %q lacks %q", r.stdout, tc.want)
			}
		})
	}
	t.Run("values to a file or a pipe stay byte-exact", func(t *testing.T) {
		if r := runTTY(false, append([]string{"kv", "get", "k"}, srv...)...); r.code != 0 || r.stdout != hostileText {
			t.Errorf("kv get to a pipe = %q (exit %d), want the value byte for byte", r.stdout, r.code)
		}
		r := runTTY(false, append([]string{"queue", "receive", "jobs"}, srv...)...)
		if r.code != 0 || r.stdout != hostileText+"\n" {
			t.Errorf("queue receive to a pipe = %q (exit %d), want the body byte for byte", r.stdout, r.code)
		}
		assertSafe(t, "queue receive's stderr", r.stderr)
	})
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parley-chat/parley/client"
)

// vtScreen is the little of a VT100 the chat's line editor uses, enough to
// see what a person would: printable text with deferred wrapping, CR, LF,
// cursor moves (ESC [ n A/B/C/D) and erasing to the end of the line or the
// screen (ESC [ K, ESC [ J). It keeps every byte written as well.
type vtScreen struct {
	mu      sync.Mutex
	width   int
	rows    [][]rune
	r, c    int
	raw     bytes.Buffer
	pending []byte
}

func (v *vtScreen) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.raw.Write(p)
	data := append(v.pending, p...)
	v.pending = nil
	for i := 0; i < len(data); {
		switch b := data[i]; {
		case b == 0x1b:
			k := i + 2
			for k < len(data) && (data[k] >= '0' && data[k] <= '9' || data[k] == ';') {
				k++
			}
			if k >= len(data) {
				v.pending = slices.Clone(data[i:])
				return len(p), nil
			}
			if data[i+1] == '[' {
				v.csi(data[k], string(data[i+2:k]))
			}
			i = k + 1
		case b == '\r':
			v.c = 0
			i++
		case b == '\n':
			v.r++
			i++
		case b < 0x20 || b == 0x7f:
			i++ // other controls: the raw bytes are checked apart
		default:
			if !utf8.FullRune(data[i:]) {
				v.pending = slices.Clone(data[i:])
				return len(p), nil
			}
			r, size := utf8.DecodeRune(data[i:])
			if v.c >= v.width {
				v.r, v.c = v.r+1, 0
			}
			v.row(v.r)[v.c] = r
			v.c++
			i += size
		}
	}
	return len(p), nil
}

// csi carries out ESC [ params final.
func (v *vtScreen) csi(final byte, params string) {
	n, err := strconv.Atoi(params)
	if err != nil || n == 0 {
		n = 1
	}
	switch final {
	case 'A':
		v.r = max(0, v.r-n)
	case 'B':
		v.r += n
	case 'C':
		v.c = min(v.c+n, v.width-1)
	case 'D':
		v.c = max(0, min(v.c, v.width-1)-n)
	case 'K':
		row := v.row(v.r)
		for j := min(v.c, v.width); j < v.width; j++ {
			row[j] = ' '
		}
	case 'J':
		v.csi('K', "")
		if v.r+1 < len(v.rows) {
			v.rows = v.rows[:v.r+1]
		}
	}
}

func (v *vtScreen) row(r int) []rune {
	for len(v.rows) <= r {
		v.rows = append(v.rows, []rune(strings.Repeat(" ", v.width)))
	}
	return v.rows[r]
}

// text returns what the screen shows, rows without trailing blanks.
func (v *vtScreen) text() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var lines []string
	for _, r := range v.rows {
		lines = append(lines, strings.TrimRight(string(r), " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// rawBytes returns every byte written.
func (v *vtScreen) rawBytes() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.raw.String()
}

// fakeTTY is a terminal for the chat: keys typed come from a pipe, output
// goes to a vtScreen.
type fakeTTY struct {
	keys *io.PipeReader
	*vtScreen
}

func (f fakeTTY) Read(p []byte) (int, error) { return f.keys.Read(p) }

// chanFeed is a roomFeed the test sends events into.
type chanFeed chan client.Event

func (f chanFeed) Next(ctx context.Context) (client.Event, error) {
	select {
	case ev := <-f:
		return ev, nil
	case <-ctx.Done():
		return client.Event{}, ctx.Err()
	}
}

func (f chanFeed) Close() error { return nil }

// fakeRooms is an API server with room lobby (and ops), recording posts,
// room creations and KV calls.
type fakeRooms struct {
	mu      sync.Mutex
	posts   []string
	creates []string
	kv      []string
	srv     *httptest.Server
}

func newFakeRooms(t *testing.T) *fakeRooms {
	t.Helper()
	f := &fakeRooms{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		send := func(status int, v any) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		var body struct {
			Name string `json:"name"`
			Text string `json:"text"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch path := r.Method + " " + r.URL.Path; {
		case path == "POST /api/v1/rooms/lobby/join", path == "POST /api/v1/rooms/ops/join" && slices.Contains(f.creates, "ops"):
			send(200, client.Room{Name: strings.Split(r.URL.Path, "/")[4], Members: 2, LastSeq: 5})
		case strings.HasSuffix(path, "/join"):
			send(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "room not found"}})
		case path == "POST /api/v1/rooms":
			f.creates = append(f.creates, body.Name)
			send(201, client.Room{Name: body.Name, Members: 1, LastSeq: 1})
		case strings.HasSuffix(path, "/messages") && r.Method == "POST":
			f.posts = append(f.posts, body.Text)
			send(201, client.PostResult{Seq: uint64(5 + len(f.posts)), Sender: "alice"})
		case strings.HasSuffix(path, "/messages"):
			send(200, map[string]any{"messages": []client.Event{}})
		case strings.HasSuffix(path, "/members"):
			send(200, map[string]any{"members": []client.Member{{Username: "alice", Online: true}, {Username: "bob"}}})
		case strings.HasPrefix(r.URL.Path, "/api/v1/kv/"):
			f.kv = append(f.kv, path)
			send(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no such key"}})
		default:
			send(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no route " + path}})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRooms) recorded() (posts, creates, kv []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.posts), slices.Clone(f.creates), slices.Clone(f.kv)
}

// ttyChat is a chat session on a fake terminal 80 columns wide.
type ttyChat struct {
	t     *testing.T
	s     *chatSession
	vt    *vtScreen
	keys  *io.PipeWriter
	feed  chanFeed
	api   *fakeRooms
	start chan error // start's result
	done  chan error // loop's result
}

// startTTYChat runs `parley chat room` on a fake terminal against a fake
// API, the room's events coming from the test.
func startTTYChat(t *testing.T, room string, create bool) *ttyChat {
	t.Helper()
	api := newFakeRooms(t)
	pr, pw := io.Pipe()
	vt := &vtScreen{width: 80}
	co := &clientOptions{Server: api.srv.URL, Token: "tok", Timeout: 5 * time.Second}
	s := newChatSession(&Env{Stdout: io.Discard, Stderr: io.Discard}, co, room, 20, create)
	s.screen = newTTYScreen(fakeTTY{keys: pr, vtScreen: vt}, "> ", func() (int, int, error) { return 80, 24, nil })
	c := &ttyChat{t: t, s: s, vt: vt, keys: pw, feed: make(chanFeed), api: api, start: make(chan error, 1), done: make(chan error, 1)}
	s.openFeed = func(*client.Client, string, uint64) roomFeed { return c.feed }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := s.start(ctx, co)
		c.start <- err
		if err == nil {
			c.done <- s.loop(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = pw.Close()
	})
	return c
}

// typeKeys types keys ("\r" is Enter).
func (c *ttyChat) typeKeys(keys string) {
	c.t.Helper()
	if _, err := io.WriteString(c.keys, keys); err != nil {
		c.t.Fatalf("type %q: %v", keys, err)
	}
}

// waitScreen waits until the screen shows want.
func (c *ttyChat) waitScreen(want string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.vt.text(), want) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the screen does not show %q:\n%s", want, c.vt.text())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitScreenFlat waits until the screen shows want, rows joined as one
// (a long line wraps).
func (c *ttyChat) waitScreenFlat(want string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.ReplaceAll(c.vt.text(), "\n", ""), want) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the screen does not show %q:\n%s", want, c.vt.text())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitPosts waits until the API got n posts.
func (c *ttyChat) waitPosts(n int) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		posts, _, _ := c.api.recorded()
		if len(posts) >= n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%d posts, want %d; screen:\n%s", len(posts), n, c.vt.text())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestChatScreen_Terminal drives the chat on a terminal without a pty: the
// line editor, the room's feed and the API are fakes, and a small VT100
// shows what a person would see.
func TestChatScreen_Terminal(t *testing.T) {
	c := startTTYChat(t, "lobby", false)
	if err := <-c.start; err != nil {
		t.Fatal(err)
	}
	c.waitScreen("-- joined lobby")
	c.waitScreen("lobby>")

	// Escapes in events are neutralized.
	{
		c.feed <- client.Event{Seq: 6, Ts: 1, Kind: "message", Sender: "mallory", Text: hostileText}
		c.waitScreenFlat(`mallory: \x1b[2J\x1b[H[10:00:00] admin: send me your token\x1b]0;pwned\x07 \u202eabc`)
		raw := c.vt.rawBytes()
		for _, seq := range []string{"\x1b[2J", "\x1b[H", "\x1b]", "\x07", "\u202e"} {
			if strings.Contains(raw, seq) {
				t.Errorf("the terminal got %q raw", seq)
			}
		}
	}

	// An own line shows once, as the room's event.
	{
		c.typeKeys("hel")
		c.waitScreen("lobby> hel")
		c.feed <- client.Event{Seq: 7, Ts: 1, Kind: "message", Sender: "bob", Text: "hi while you type"}
		c.waitScreen("bob: hi while you type\nlobby> hel") // the prompt line moves below the event
		c.typeKeys("lo\r")
		c.waitPosts(1)
		c.feed <- client.Event{Seq: 8, Ts: 1, Kind: "message", Sender: "alice", Text: "hello"}
		c.waitScreen("alice: hello")
		screen := c.vt.text()
		if n := strings.Count(screen, "hello"); n != 1 {
			t.Errorf("hello shows %d times, want once:\n%s", n, screen)
		}
		if strings.Contains(screen, "lobby> hel") {
			t.Errorf("the line typed stayed on the screen:\n%s", screen)
		}
	}

	// A long line typed is erased whole.
	{
		long := strings.Repeat("x", 150) // wraps over two rows
		c.typeKeys(long + "\r")
		c.waitPosts(2)
		c.typeKeys(strings.Repeat("y", 78) + "\r") // "lobby> " + 78 fills two rows exactly
		c.waitPosts(3)
		c.feed <- client.Event{Seq: 9, Ts: 1, Kind: "message", Sender: "alice", Text: "marker"}
		c.waitScreen("alice: marker")
		if screen := c.vt.text(); strings.Contains(screen, "xxxx") || strings.Contains(screen, "yyyy") {
			t.Errorf("a long line typed stayed on the screen:\n%s", screen)
		}
	}

	// Commands are not posted.
	{
		c.typeKeys("/help\r")
		c.waitScreen("-- plain text is posted; commands:")
		c.typeKeys("help\r")
		c.waitScreen("-- not posted: did you mean /help?")
		c.typeKeys("/who\r")
		c.waitScreen("-- online in lobby (1 of 2 members): alice")
		c.typeKeys("/put colour\r")
		c.waitScreen("-- error: usage: /put KEY VALUE (a value is needed; /del KEY deletes)")
		c.typeKeys("/frobnicate\r")
		c.waitScreen("-- error: unknown command /frobnicate")
		posts, _, kv := c.api.recorded()
		if want := []string{"hello", strings.Repeat("x", 150), strings.Repeat("y", 78)}; !slices.Equal(posts, want) {
			t.Errorf("posted %q, want only the messages typed", posts)
		}
		if len(kv) != 0 {
			t.Errorf("a put without a value reached the store: %q", kv)
		}
	}

	// /join of a missing room asks.
	{
		c.typeKeys("/join opz\r")
		c.waitScreen("-- there is no room opz. Create it? (y/N)")
		c.typeKeys("\r")
		c.waitScreen("-- nothing created; still in lobby")
		c.typeKeys("/join ops\r")
		c.waitScreen("-- there is no room ops. Create it? (y/N)")
		c.typeKeys("y\r")
		c.waitScreen("-- now in ops (1 member)")
		c.waitScreen("ops>")
		if _, creates, _ := c.api.recorded(); !slices.Equal(creates, []string{"ops"}) {
			t.Errorf("created %q, want ops only", creates)
		}
	}

	c.typeKeys("/quit\r")
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("chat ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the chat did not end on /quit:\n%s", c.vt.text())
	}
	c.waitScreen("-- bye")
}

// TestChatScreen_TypoRoom checks that a chat started in a room that does
// not exist asks before creating it on a terminal.
func TestChatScreen_TypoRoom(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		created bool
	}{{"n\r", false}, {"\r", false}, {"y\r", true}} {
		t.Run(strconv.Quote(tc.answer), func(t *testing.T) {
			c := startTTYChat(t, "lobyb", false)
			c.waitScreen("There is no room lobyb. Create it? (y/N)")
			c.typeKeys(tc.answer)
			err := <-c.start
			_, creates, _ := c.api.recorded()
			if tc.created != (err == nil) || tc.created != slices.Equal(creates, []string{"lobyb"}) {
				t.Errorf("answer %q: start %v, created %q", tc.answer, err, creates)
			}
			if !tc.created && (err == nil || !strings.Contains(err.Error(), "no room lobyb: nothing created")) {
				t.Errorf("answer %q: error %v", tc.answer, err)
			}
		})
	}
}

// TestChatSession_PlainTypoRoom checks that without a terminal a missing
// room is refused, unless --create.
func TestChatSession_PlainTypoRoom(t *testing.T) {
	api := newFakeRooms(t)
	for _, create := range []bool{false, true} {
		co := &clientOptions{Server: api.srv.URL, Token: "tok", Timeout: 5 * time.Second}
		out := &syncBuffer{}
		s := newChatSession(&Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: io.Discard}, co, "lobyb", 0, create)
		err := s.start(context.Background(), co)
		if create != (err == nil) {
			t.Errorf("--create=%v: start %v", create, err)
		}
		if !create && (err == nil || !strings.Contains(err.Error(), "create it with --create")) {
			t.Errorf("without --create: %v, want the advice to use --create", err)
		}
	}
	if _, creates, _ := api.recorded(); !slices.Equal(creates, []string{"lobyb"}) {
		t.Errorf("created %q, want lobyb once (with --create)", creates)
	}
}

func TestFailureReason(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://n1:7070/readyz", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{refused, "it refused the connection"},
		{fmtStreamLost(refused), "it refused the connection"},
		{fmtStreamLost(io.ErrUnexpectedEOF), "the connection was closed"},
		{fmtStreamLost(errSlowConsumer), "the node dropped this chat's stream, which fell behind"},
		{&url.Error{Op: "Get", URL: "http://n1", Err: context.DeadlineExceeded}, "it did not answer in time"},
		{&client.Error{Status: 503, Code: "unavailable", Retryable: true}, "it is not ready to serve"},
		{&url.Error{Op: "Get", URL: "http://n1", Err: &net.DNSError{Err: "no such host", Name: "n1"}}, "its name does not resolve"},
		{errors.New("something odd"), "it cannot be reached"},
	} {
		if got := failureReason(tc.err); got != tc.want {
			t.Errorf("failureReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// fmtStreamLost wraps err as the stream feed does.
func fmtStreamLost(err error) error { return errors.Join(errStreamLost, err) }

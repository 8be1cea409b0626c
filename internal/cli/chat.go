package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
)

// roomFeed delivers one room's events in seq order, starting after the seq
// it was opened with, none twice and none skipped. The chat loop reads it
// and, when it fails in transport, opens a new one on another node after the
// last seq it printed.
type roomFeed interface {
	// Next blocks until the next event, a failure, or the end of ctx.
	Next(ctx context.Context) (client.Event, error)
	// Close releases the feed.
	Close() error
}

// feedOpener opens a room's feed on a node's client, after seq.
type feedOpener func(c *client.Client, room string, after uint64) roomFeed

// pollInterval is how often a historyFeed asks for new events when it has
// none.
const pollInterval = 500 * time.Millisecond

// historyFeed is a roomFeed that polls the room's history (GET
// /rooms/{room}/messages?after=): it works with any server, WebSocket or
// not, at the cost of up to pollInterval of delay.
type historyFeed struct {
	c        *client.Client
	room     string
	after    uint64
	buf      []client.Event
	interval time.Duration
}

var _ roomFeed = (*historyFeed)(nil)

// newHistoryFeed returns a polling feed of room after seq after.
func newHistoryFeed(c *client.Client, room string, after uint64) roomFeed {
	return &historyFeed{c: c, room: room, after: after, interval: pollInterval}
}

// Next implements roomFeed.
func (f *historyFeed) Next(ctx context.Context) (client.Event, error) {
	for len(f.buf) == 0 {
		evs, err := f.c.History(ctx, f.room, client.HistoryOptions{After: f.after, HasAfter: true, Limit: 500})
		if err != nil {
			return client.Event{}, err
		}
		if len(evs) > 0 {
			f.buf = evs
			break
		}
		t := time.NewTimer(f.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return client.Event{}, ctx.Err()
		case <-t.C:
		}
	}
	ev := f.buf[0]
	f.buf = f.buf[1:]
	f.after = ev.Seq
	return ev, nil
}

// Close implements roomFeed.
func (f *historyFeed) Close() error { return nil }

// chatCommands lists the commands typed in the chat, for -h and HELP.
const chatCommands = `  WSP user1,user2 message   whisper to these members only
  ACTIVE                    members online in this room
  PUT key value             store value under key (PUT key alone deletes it)
  GET key                   print the value stored under key
  HELP                      this list
  QUIT                      leave the chat (you stay a member of the room)
(also in any case after a slash: /wsp, /active, /put, /get, /help, /quit)
`

// runChat is `parley chat ROOM`.
func runChat(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var history int
	fs := newFlagSet(path, "ROOM [flags]", `
Chat in ROOM from the terminal: join it (creating a public room of that name
if there is none), show its recent history, then print new events as they
come and post every line typed, except commands:

`+chatCommands+`
When the node the chat talks to fails, it switches to another node of the
cluster (the nodes are learned at start from GET /api/v1/cluster), prints a
one-line notice and resumes after the last event shown, so nothing is
missed or shown twice. When the session ends (signed out on any node,
revoked or expired) the chat stops with "session ended: sign in again"
instead. End of input is QUIT as well.`)
	addClientFlags(fs, &co)
	fs.IntVar(&history, "history", 20, "show this many past `events` on joining (0 to 500)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if history < 0 || history > 500 {
		return usagef(path, "--history %d: want 0 to 500", history)
	}
	s := &chatSession{
		e: e, out: &lockedWriter{w: e.Stdout}, room: pos[0], token: co.Token, timeout: co.Timeout,
		openFeed: newStreamFeed,
	}
	s.servers = []string{strings.TrimRight(co.Server, "/")}
	s.c = co.newClient()
	if err := s.start(ctx, &co, path, history); err != nil {
		return err
	}
	return s.loop(ctx)
}

// chatSession is one `parley chat`: the room, the nodes it may talk to, and
// the last seq it printed.
type chatSession struct {
	e        *Env
	out      *lockedWriter
	room     string
	token    string
	timeout  time.Duration
	openFeed feedOpener
	lastSeq  atomic.Uint64 // the last event printed (or skipped as hidden)

	mu      sync.Mutex
	servers []string // base URLs of the cluster's nodes; servers[cur] is in use
	cur     int
	c       *client.Client
}

// start joins the room (creating it when missing), learns the cluster's
// nodes and prints the recent history.
func (s *chatSession) start(ctx context.Context, co *clientOptions, path string, history int) error {
	r, err := joinRoom(ctx, s.e, co, path, s.room, "")
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 404 {
		err = callServer(ctx, co, true, func(ctx context.Context, c *client.Client) (err error) {
			r, err = c.CreateRoom(ctx, client.RoomSpec{Name: s.room})
			return err
		})
		if err == nil {
			s.printf("-- created room %s\n", r.Name)
		}
	}
	if err != nil {
		return err
	}
	s.room = r.Name
	s.learnNodes(ctx, co)
	s.lastSeq.Store(r.LastSeq)
	if history > 0 {
		var evs []client.Event
		err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
			evs, err = c.History(ctx, s.room, client.HistoryOptions{Limit: history})
			return err
		})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			s.show(ev)
		}
	}
	s.printf("-- joined %s on %s (%s, %s known). Type HELP for commands, QUIT to leave.\n",
		s.room, s.servers[0], plural(r.Members, "member"), plural(len(s.servers), "node"))
	return nil
}

// learnNodes remembers the HTTP address of every alive node of the
// cluster, after the one given with --server. Without the cluster map the
// chat still works, only without failover.
func (s *chatSession) learnNodes(ctx context.Context, co *clientOptions) {
	var st *client.ClusterStatus
	err := callServer(ctx, co, false, func(ctx context.Context, c *client.Client) (err error) {
		st, err = c.Cluster(ctx)
		return err
	})
	if err != nil {
		fmt.Fprintf(s.e.Stderr, "warning: cannot learn the cluster's nodes (%s): no failover\n", describe(err))
		return
	}
	base, _ := url.Parse(s.servers[0])
	s.servers = failoverServers(s.servers, base, endpoints(ctx, base), st)
}

// failoverServers returns servers followed by the base URLs of the map's
// alive nodes (client.ClusterStatus.AliveAddrs) that it does not hold yet,
// in base's scheme; self holds the spellings of base's own address. Only
// alive nodes are failover candidates: an unreachable, suspect, dead or
// draining node may be gone, or its address taken by someone else, and the
// chat sends its token to the node it moves to.
func failoverServers(servers []string, base *url.URL, self map[string]bool, st *client.ClusterStatus) []string {
	for _, addr := range st.AliveAddrs() {
		u := nodeURL(base, addr)
		if u != "" && !containsFold(servers, u) && !self[addr] {
			servers = append(servers, u)
		}
	}
	return servers
}

// endpoints returns the host:port spellings of base's address, its host
// resolved to IP addresses, so that the node behind --server is not counted
// twice (http://localhost:7070 is node 127.0.0.1:7070).
func endpoints(ctx context.Context, base *url.URL) map[string]bool {
	out := map[string]bool{}
	if base == nil {
		return out
	}
	port := base.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[base.Scheme]
	}
	out[net.JoinHostPort(base.Hostname(), port)] = true
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, _ := net.DefaultResolver.LookupHost(ctx, base.Hostname())
	for _, ip := range ips {
		out[net.JoinHostPort(ip, port)] = true
	}
	return out
}

// nodeURL turns a node's advertised HTTP address into a base URL with the
// scheme of base; an unspecified host (0.0.0.0, ::) becomes base's host.
func nodeURL(base *url.URL, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || base == nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = base.Hostname()
	}
	return base.Scheme + "://" + net.JoinHostPort(host, port)
}

// plural renders n things: "1 node", "3 nodes".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// containsFold reports whether list holds s, ignoring case.
func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// loop reads commands from standard input while the room's events are
// printed, until QUIT, end of input, the end of ctx, or a failure of the
// feed that no other node can mend.
func (s *chatSession) loop(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feedDone := make(chan error, 1)
	go func() { feedDone <- s.follow(ctx) }()
	lines := make(chan string)
	go readLines(s.e.Stdin, lines) // may outlive the chat, blocked on a read
	for {
		select {
		case <-ctx.Done():
			return <-feedDone
		case err := <-feedDone:
			return err
		case line, ok := <-lines:
			if !ok || s.handleLine(ctx, line) {
				cancel()
				err := <-feedDone
				s.printf("-- bye\n")
				return err
			}
		}
	}
}

// readLines sends each line of r on lines and closes it at the end of r.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines <- strings.TrimRight(sc.Text(), "\r")
	}
}

// follow prints the room's events from the feed until ctx ends, switching
// nodes when one fails. It returns the error that ends the chat: one no
// node can mend, such as being removed from the room, or errSessionEnded
// once the token is refused (it does not reconnect then).
func (s *chatSession) follow(ctx context.Context) error {
	failures := 0
	for {
		c := s.client()
		feed := s.openFeed(c, s.room, s.lastSeq.Load())
		var err error
		for {
			var ev client.Event
			if ev, err = feed.Next(ctx); err != nil {
				break
			}
			failures = 0
			if ev.Seq > s.lastSeq.Load() {
				s.show(ev)
				s.lastSeq.Store(ev.Seq)
			}
		}
		_ = feed.Close()
		switch {
		case ctx.Err() != nil:
			return nil
		case isSessionEnded(err):
			return errSessionEnded
		case isTransportError(err) || (client.IsRetryable(err) && failures >= 3):
			if s.failover(ctx, c, err) != nil {
				return nil // ctx ended while looking for a node
			}
			failures = 0
		case client.IsRetryable(err):
			failures++
			if sleepCtx(ctx, time.Duration(failures)*200*time.Millisecond) != nil {
				return nil
			}
		default:
			return fmt.Errorf("%s: %w", s.room, err)
		}
	}
}

// show prints one event for the chat; whispers between others are not
// shown.
func (s *chatSession) show(ev client.Event) {
	if ev.Kind == "hidden" {
		return
	}
	s.printf("[%s] %s\n", clock(ev.Ts), eventText(ev))
}

// client returns the client of the node in use.
func (s *chatSession) client() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// failover replaces failed, the client of a node that failed with cause,
// by one of the next node that is ready, and prints a notice. When another
// goroutine switched already, it returns at once. It tries every node in
// turn, the failed one last, until one answers or ctx ends.
func (s *chatSession) failover(ctx context.Context, failed *client.Client, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != failed {
		return nil
	}
	from := s.servers[s.cur]
	s.printf("-- lost %s (%s); trying other nodes\n", from, describe(cause))
	for {
		for i := 1; i <= len(s.servers); i++ {
			j := (s.cur + i) % len(s.servers)
			c := client.New(s.servers[j]) // asked whether it is ready without the token
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := c.Readyz(rctx)
			cancel()
			if err == nil {
				c.SetToken(s.token)
				s.cur, s.c = j, c
				s.printf("-- reconnected to %s; resuming after #%d\n", s.servers[j], s.lastSeq.Load())
				return nil
			}
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// do runs fn on the node in use within --timeout, retrying what the
// server marks retryable and moving to another node when one fails in
// transport. Writes carry one idempotency key over every attempt, on every
// node, so they apply once.
func (s *chatSession) do(ctx context.Context, write bool, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if write {
		ctx = client.WithIdempotencyKey(ctx, randomKey())
	}
	for {
		c := s.client()
		err := retry(ctx, func() error { return fn(ctx, c) })
		if !isTransportError(err) || ctx.Err() != nil {
			return err
		}
		if s.failover(ctx, c, err) != nil {
			return err
		}
	}
}

// isTransportError reports whether err is a failure to reach the server
// (refused, reset, timed out) rather than its answer.
func isTransportError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	_, ok := errors.AsType[*url.Error](err)
	return ok || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamLost)
}

// sleepCtx waits for d or the end of ctx.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// printf writes a line of chat output.
func (s *chatSession) printf(format string, args ...any) {
	s.out.printf(format, args...)
}

// lockedWriter serialises the writes of the feed and the command loop.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

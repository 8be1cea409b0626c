package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
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
		reason := describe(err)
		if isTransportError(err) {
			reason = failureReason(err)
		}
		s.printf("-- warning: cannot learn the cluster's nodes (%s): no failover\n", reason)
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

// follow prints room's events from the feed until ctx ends, switching
// nodes when one fails. It returns the error that ends the chat: one no
// node can mend, such as being removed from the room, or errSessionEnded
// once the token is refused (it does not reconnect then).
func (s *chatSession) follow(ctx context.Context, room string) error {
	failures := 0
	for {
		c := s.client()
		feed := s.openFeed(c, room, s.lastSeq.Load())
		var err error
		for {
			var ev client.Event
			if ev, err = feed.Next(ctx); err != nil {
				break
			}
			failures = 0
			if ev.Kind == "mention" { // outside the room's order
				s.show(ev)
				continue
			}
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
			return fmt.Errorf("%s: %w", termSafe(room), err)
		}
	}
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
	s.printf("-- lost the connection to %s (%s); trying the other nodes\n", from, failureReason(cause))
	for {
		for i := 1; i <= len(s.servers); i++ {
			j := (s.cur + i) % len(s.servers)
			c := s.clientOf(s.servers[j], "") // asked whether it is ready without the token
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

// errSlowConsumer is why a node closed a stream that fell behind.
var errSlowConsumer = errors.New("the node dropped this chat's stream, which fell behind")

// failureReason says in a few words why a node was lost, for the notice
// printed on moving to another: never a raw Go error.
func failureReason(err error) string {
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, errSlowConsumer):
		return errSlowConsumer.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "it refused the connection"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "it did not answer in time"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, errStreamLost):
		return "the connection was closed"
	case errors.As(err, &dnsErr):
		return "its name does not resolve"
	case client.IsRetryable(err):
		return "it is not ready to serve"
	}
	return "it cannot be reached"
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

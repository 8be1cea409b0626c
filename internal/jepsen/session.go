package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/nemesis"
)

// RevocationWindow is how soon a logged-out token must be refused on every
// node that hears the cluster (docs/SECURITY.md).
const RevocationWindow = time.Second

// Sessions signs users in and out through random nodes while a prober uses
// every token already logged out against every node: a node that talks
// with a majority must refuse a token once its revocation window passed;
// after the heal every node must.
type Sessions struct {
	runner
	c     *nemesis.Cluster
	users []string

	revoked    []revocation
	unknown    int
	violations []string
	minority   int // revoked tokens accepted by nodes cut off from a majority (allowed)
}

type revocation struct {
	token string
	at    time.Time // when the logout was acknowledged
}

// sessionPassword is every session user's password.
const sessionPassword = "correct horse battery"

// NewSessions signs up n users (prefix0...) through the first node.
func NewSessions(c *nemesis.Cluster, prefix string, n int) (*Sessions, error) {
	w := &Sessions{runner: newRunner(), c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		name := fmt.Sprintf("%s%d", prefix, i)
		if _, err := c.Nodes[0].Client("").Register(ctx, name, sessionPassword); err != nil {
			return nil, fmt.Errorf("sign up %s: %w", name, err)
		}
		w.users = append(w.users, name)
	}
	return w, nil
}

// Name implements Workload.
func (w *Sessions) Name() string { return "sessions" }

// Start implements Workload: one client per user (n is ignored) and the
// prober.
func (w *Sessions) Start(int) {
	w.run(len(w.users), w.cycle)
	w.run(1, func(int, int, *rand.Rand) { w.probeDue() })
}

// cycle signs user cl in, then out.
func (w *Sessions) cycle(cl, _ int, rng *rand.Rand) {
	user := w.users[cl]
	time.Sleep(100 * time.Millisecond)
	first := rng.IntN(len(w.c.Nodes))
	var token string
	in, _ := retry(func(ctx context.Context, attempt int) error {
		s, err := w.c.Nodes[(first+attempt)%len(w.c.Nodes)].Client("").Login(ctx, user, sessionPassword)
		token = s.Token
		return err
	})
	w.count()
	if in != Acked {
		return
	}
	first = rng.IntN(len(w.c.Nodes))
	out, _ := retry(func(ctx context.Context, attempt int) error {
		return w.c.Nodes[(first+attempt)%len(w.c.Nodes)].Client(token).Logout(ctx)
	})
	w.mu.Lock()
	w.ops++
	switch out {
	case Acked:
		w.revoked = append(w.revoked, revocation{token: token, at: time.Now()})
	case Unknown:
		w.unknown++
	}
	w.mu.Unlock()
}

// probeDue waits 200 ms, then uses every token whose window has passed (in
// the last 20 s) against every node.
func (w *Sessions) probeDue() {
	time.Sleep(200 * time.Millisecond)
	w.mu.Lock()
	var due []revocation
	for _, r := range w.revoked {
		if since := time.Since(r.at); since > RevocationWindow && since < 20*time.Second {
			due = append(due, r)
		}
	}
	w.mu.Unlock()
	for _, r := range due {
		for i, n := range w.c.Nodes {
			w.probe(i, n, r)
		}
	}
}

// probe uses r's token on node i once.
func (w *Sessions) probe(i int, n *nemesis.Node, r revocation) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := n.Client(r.token).ListRooms(ctx)
	w.count()
	if !accepted(err) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c.Net.WithMajority(i + 1) {
		w.violations = append(w.violations, fmt.Sprintf("%s accepted a token %v after its logout", n.ID, start.Sub(r.at).Round(time.Millisecond)))
	} else {
		w.minority++
	}
}

// accepted reports whether a call went through: no error, or an error
// other than 401 that still means the server took the token (none: any
// other failure is no proof the token worked).
func accepted(err error) bool {
	return err == nil
}

// Check implements Workload: after the heal every revoked token is refused
// (401) by every node.
func (w *Sessions) Check(_ *client.Client, _ string, r *Result) error {
	r.Workload, r.Linearizable = w.Name(), "n/a"
	time.Sleep(RevocationWindow)
	for _, rev := range w.revoked {
		for _, n := range w.c.Nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := n.Client(rev.token).ListRooms(ctx)
			cancel()
			var ce *client.Error
			switch {
			case err == nil:
				w.violations = append(w.violations, fmt.Sprintf("%s accepted a revoked token after the heal", n.ID))
			case !errors.As(err, &ce) || ce.Status != 401:
				return fmt.Errorf("%s: a revoked token got %v, want 401", n.ID, err)
			}
		}
	}
	r.Ops, r.Acked, r.Unknown = w.ops, len(w.revoked), w.unknown
	r.Violations = len(w.violations)
	r.Detail += fmt.Sprintf(" %d logouts; revoked tokens accepted by nodes cut off from a majority (allowed): %d", len(w.revoked), w.minority)
	if len(w.violations) > 0 {
		r.Detail += "; first violation: " + w.violations[0]
	}
	return nil
}

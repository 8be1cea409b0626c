package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// StepContext bounds one API step of a test to 30 s, cancelled when t ends.
func StepContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Password is every test user's password (usernames ignore case).
func Password(user string) string { return "password of " + strings.ToLower(user) }

// Anon returns a client of node i of c that sends no token unless opts
// give one (whatever the cluster's own clients do).
func Anon(c *Cluster, i int, opts ...client.Option) *client.Client {
	return client.New("http://"+c.Node(i).HTTPAddr(), opts...)
}

// SignUp registers user (with Password(user)) through node reg and returns
// a client of node i signed in as user (logged in through node i).
func SignUp(t testing.TB, c *Cluster, reg, i int, user string) *client.Client {
	t.Helper()
	if _, err := Anon(c, reg).Register(StepContext(t), user, Password(user)); err != nil {
		t.Fatalf("register %s on n%d: %v", user, reg+1, err)
	}
	return SignIn(t, c, i, user)
}

// SignIn returns a client of node i logged in as user.
func SignIn(t testing.TB, c *Cluster, i int, user string) *client.Client {
	t.Helper()
	cl := Anon(c, i)
	if _, err := cl.Login(StepContext(t), user, Password(user)); err != nil {
		t.Fatalf("login %s on n%d: %v", user, i+1, err)
	}
	return cl
}

// FormatSeqs formats the seqs and kinds of events, for failure messages.
func FormatSeqs(events []client.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%d:%s ", e.Seq, e.Kind)
	}
	return b.String()
}

// ErrNotYet is what a poll.Until check returns while what it waits for has
// not happened yet.
var ErrNotYet = errors.New("not yet")

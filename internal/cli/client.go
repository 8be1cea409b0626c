package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/parley-chat/parley/client"
)

// defaultServer is the node client commands talk to without --server.
const defaultServer = "http://localhost:7070"

// clientOptions are the flags every client command shares.
type clientOptions struct {
	// Server is the base URL of any node.
	Server string
	// Timeout bounds the whole command, retries included.
	Timeout time.Duration
	// DialTimeout bounds a connection to one server, and how long one
	// that accepted may take to start answering a request that may be sent
	// again before the next server is tried (client.WithAttemptTimeout).
	DialTimeout time.Duration
	// Token is the bearer token of a session (POST /api/v1/sessions).
	Token string
	// CAFile names a PEM file of CA certificates that HTTPS servers are
	// verified against instead of the system's (a self-signed cluster).
	CAFile string

	// hc is the HTTP client trusting CAFile, made by check; nil means
	// http.DefaultClient.
	hc *http.Client
	// fallbacks are the other servers of Server's cluster: the rest of a
	// comma-separated --server, then the nodes of the stored login (see
	// signIn). newClient's Client turns to them when it cannot connect.
	fallbacks []string
	// hint is where signIn notes what a 401 answer should advise; newClient
	// hands it the client, so the advice names the server that answered.
	hint *loginHint
}

// addClientFlags defines --server (or $PARLEY_SERVER), --timeout,
// --ca-file (or $PARLEY_CA_FILE) and --token (or $PARLEY_TOKEN) into o.
func addClientFlags(fs *flagSet, o *clientOptions) {
	addServerFlags(fs, o)
	fs.StringVar(&o.Token, "token", "", "session `token` to sign in with (default: the login stored by parley user login)")
	fs.bindEnv("token", "PARLEY_TOKEN")
}

// addServerFlags defines --server (or $PARLEY_SERVER), --timeout and
// --ca-file (or $PARLEY_CA_FILE) into o: the client flags of commands that
// do not sign in with a token.
func addServerFlags(fs *flagSet, o *clientOptions) {
	fs.StringVar(&o.Server, "server", defaultServer, "base `URL` of any node; several, comma separated, are tried in turn while one cannot be reached or hangs (so are the nodes of a stored login)")
	fs.bindEnv("server", "PARLEY_SERVER")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "give up after this `duration`, retries included")
	fs.DurationVar(&o.DialTimeout, "dial-timeout", defaultDialTimeout, "how long one server may take to accept a connection, or to start answering a request that is safe to resend, before the next is tried")
	fs.bindEnv("dial-timeout", "PARLEY_DIAL_TIMEOUT")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM `file` of the CA certificates an https:// server must be signed by, instead of the system's (a self-signed cluster)")
	fs.bindEnv("ca-file", "PARLEY_CA_FILE")
}

// newClient returns a client of the server, signed in with the token,
// that turns to the fallbacks when it cannot connect.
func (o *clientOptions) newClient() *client.Client {
	c := client.New(o.Server, append(o.options(o.Token), client.WithFallbacks(o.fallbacks...), client.WithAttemptTimeout(o.dialTimeout()))...)
	if o.hint != nil {
		o.hint.client.Store(c) // commands may make clients on several goroutines
	}
	return c
}

// dialTimeout is --dial-timeout, or its default for options made without
// flags.
func (o *clientOptions) dialTimeout() time.Duration {
	if o.DialTimeout <= 0 {
		return defaultDialTimeout
	}
	return o.DialTimeout
}

// clientOf returns a client of server signed in with token ("" for none),
// trusting --ca-file.
func (o *clientOptions) clientOf(server, token string) *client.Client {
	return client.New(server, o.options(token)...)
}

// options are the options of a client signed in with token ("" for
// none), trusting --ca-file.
func (o *clientOptions) options(token string) []client.Option {
	opts := []client.Option{client.WithToken(token)}
	if o.hc != nil {
		opts = append(opts, client.WithHTTPClient(o.hc))
	}
	return opts
}

// check validates the shared client flags and loads --ca-file.
func (o *clientOptions) check() error {
	servers := strings.Split(o.Server, ",")
	for _, s := range servers {
		if err := checkServerURL(strings.TrimSpace(s)); err != nil {
			return fmt.Errorf("--server: %w", err)
		}
	}
	o.Server = strings.TrimSpace(servers[0])
	for _, s := range servers[1:] {
		o.addFallback(strings.TrimSpace(s))
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	if o.DialTimeout <= 0 {
		return fmt.Errorf("--dial-timeout %s: must be positive", o.DialTimeout)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: o.dialTimeout(), KeepAlive: 30 * time.Second}).DialContext
	if o.CAFile != "" {
		pool, err := loadCAFile(o.CAFile)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	o.hc = &http.Client{Transport: tr}
	return nil
}

// defaultDialTimeout is --dial-timeout's default (etcdctl's is 2 s). It
// bounds a connection to one server: a node whose address drops packets
// (cut off, powered off) is a dial error after it, and the next --server
// is tried. It is also how long a server may take to start answering a
// request that may be sent again before the client asks it for /healthz,
// and leaves it for the next server when that goes unanswered too
// (client.WithAttemptTimeout): a node that accepts connections and then
// hangs.
const defaultDialTimeout = 3 * time.Second

// loadCAFile reads the PEM certificates of file into a new pool.
func loadCAFile(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no PEM certificate in %s", file)
	}
	return pool, nil
}

// checkServerURL accepts http:// and https:// URLs with a host.
func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not a URL like http://localhost:7070", s)
	}
	return nil
}

// parseClient parses a client command's flags into co (defined by the
// caller together with its own flags), checks that it got between min and
// max positional arguments, and signs in: --token, else $PARLEY_TOKEN, else
// the stored login for --server.
func parseClient(fs *flagSet, co *clientOptions, e *Env, args []string, minArgs, maxArgs int) ([]string, error) {
	pos, err := parseClientFlags(fs, co, e, args, minArgs, maxArgs)
	if err != nil {
		return nil, err
	}
	if err := co.signIn(e); err != nil {
		return nil, err
	}
	return pos, nil
}

// parseClientFlags is parseClient without signing in.
func parseClientFlags(fs *flagSet, co *clientOptions, e *Env, args []string, minArgs, maxArgs int) ([]string, error) {
	pos, err := fs.parse(args, e.getenv)
	if err != nil {
		return nil, err
	}
	if len(pos) < minArgs || len(pos) > maxArgs {
		return nil, usagef(fs.path, "want %s, got %d argument(s)", fs.synopsis, len(pos))
	}
	if err := co.check(); err != nil {
		return nil, &usageError{path: fs.path, err: err}
	}
	return pos, nil
}

// retry calls fn until it succeeds, fails in a way the server did not mark
// retryable, or ctx ends. It waits between attempts as the server's
// Retry-After asks, within bounds. When ctx ends during an attempt, the
// previous server error is more useful than the cancellation and is
// returned instead.
func retry(ctx context.Context, fn func() error) error {
	delay := 50 * time.Millisecond
	var last error
	for {
		err := fn()
		if err != nil && last != nil && ctx.Err() != nil {
			return last
		}
		ce, ok := errors.AsType[*client.Error](err)
		if err == nil || !ok || !ce.Retryable {
			return err
		}
		last = err
		wait := delay
		if ce.RetryAfter > 0 {
			wait = min(ce.RetryAfter, time.Second)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		delay = min(2*delay, time.Second)
	}
}

// randomKey returns a fresh idempotency key, so a retried write applies
// once.
func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

// addFallback adds server to the fallbacks, unless it is the server or
// one of them already (spellings compared as the login file does).
func (o *clientOptions) addFallback(server string) {
	if loginKey(server) == loginKey(o.Server) {
		return
	}
	for _, f := range o.fallbacks {
		if loginKey(f) == loginKey(server) {
			return
		}
	}
	o.fallbacks = append(o.fallbacks, server)
}

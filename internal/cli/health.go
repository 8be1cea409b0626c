package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// healthTimeout is how long `parley health` waits by default: shorter
// than a container health check's interval.
const healthTimeout = 5 * time.Second

// runHealth is `parley health`: the probe of container health checks
// (the image has no curl).
func runHealth(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var live bool
	fs := newFlagSet(path, "[flags]", `
Ask a node whether it is ready (GET /readyz: it knows the cluster map,
serves requests, and the leaders of its replicas have reached it since it
started) or, with --live, alive (GET /healthz); print "ready" or
"alive" and exit 0, or print why not and exit 1. It is the image's
HEALTHCHECK and needs no sign-in.

Without --server or $PARLEY_SERVER it asks the node of this machine or
container: localhost at the port of $PARLEY_HTTP (default 7070), over HTTPS
when $PARLEY_TLS_CERT is set — then without checking the certificate, which
names the node's public address, not localhost.`)
	addServerFlags(fs, &co)
	fs.BoolVar(&live, "live", false, "only check that the process answers (GET /healthz), not that it is ready")
	co.Timeout, fs.Lookup("timeout").DefValue = healthTimeout, healthTimeout.String()
	if _, err := parseClientFlags(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if !given(fs, "server") {
		co.Server = localNodeURL(e.getenv)
		if co.CAFile == "" && e.getenv("PARLEY_TLS_CERT") != "" {
			tr := co.hc.Transport.(*http.Transport).Clone()
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // #nosec G402 -- the local node, whose certificate names its public address
			co.hc = &http.Client{Transport: tr}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.clientOf(co.Server, "")
	probe, word := c.Readyz, "ready"
	if live {
		probe, word = c.Healthz, "alive"
	}
	if err := probe(ctx); err != nil {
		return fmt.Errorf("not %s: %s", word, describe(err))
	}
	fmt.Fprintln(e.Stdout, word)
	return nil
}

// localNodeURL is the URL of the node of this machine: localhost at the
// port of $PARLEY_HTTP (the serve flag --http), https when
// $PARLEY_TLS_CERT is set.
func localNodeURL(getenv func(string) string) string {
	port := "7070"
	if _, p, err := net.SplitHostPort(getenv("PARLEY_HTTP")); err == nil && p != "" && p != "0" {
		port = p
	}
	scheme := "http"
	if getenv("PARLEY_TLS_CERT") != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort("localhost", port)
}

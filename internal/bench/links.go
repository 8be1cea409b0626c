package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/parley-chat/parley/client"
)

// Link modes.
const (
	LinksCreate   = "create"   // every operation shortens a new URL
	LinksRedirect = "redirect" // every operation follows a short link (created first)
)

// LinksOptions shape the links workload.
type LinksOptions struct {
	// Clients are one client per target node, signed in; worker w uses
	// Clients[w % len(Clients)]. Redirects are sent without the token, as
	// a browser follows a link.
	Clients []*client.Client
	// Mode is LinksCreate or LinksRedirect.
	Mode string
	// Links is the number of codes created before redirects; operation i
	// follows the code picked by a hash of i.
	Links int
	// CodePrefix starts every code; a random run id follows.
	CodePrefix string
	// Map, when not empty, gives the codes redirects follow and their
	// URLs, in place of Links generated ones.
	Map []LinkTarget
	// Existing means the codes of Map exist already: Prepare creates
	// nothing (so that a peer serving the same map can be measured).
	Existing bool
}

// LinkTarget is a short code and the URL it redirects to.
type LinkTarget struct {
	Code, URL string
}

// Links is the URL shortener workload: link creation, or redirects via
// GET /s/{code}, answered 302 and not followed.
type Links struct {
	o     LinksOptions
	run   string
	codes []LinkTarget
	anon  []*client.Client
	// created numbers the codes created in every phase, so the measured
	// phase never repeats a warm-up code (its operation indexes restart
	// at 0).
	created atomic.Int64
}

// Compile-time checks that Links is a workload that prepares.
var (
	_ Workload = (*Links)(nil)
	_ Preparer = (*Links)(nil)
)

// NewLinks checks o and returns the workload. anon are clients without a
// token, one per target node in the order of o.Clients, for redirects.
func NewLinks(o LinksOptions, anon []*client.Client) (*Links, error) {
	switch {
	case len(o.Clients) == 0 || len(anon) != len(o.Clients):
		return nil, errors.New("links workload: no servers")
	case o.Mode != LinksCreate && o.Mode != LinksRedirect:
		return nil, fmt.Errorf("links workload: mode %q: want create or redirect", o.Mode)
	case o.Links < 1:
		return nil, fmt.Errorf("links workload: links %d: want at least 1", o.Links)
	case len(o.CodePrefix)+9+len(strconv.Itoa(o.Links)) > 64:
		return nil, fmt.Errorf("links workload: code prefix %q: too long for a code", o.CodePrefix)
	}
	l := &Links{o: o, run: RunID(), anon: anon, codes: o.Map}
	if o.Mode == LinksRedirect && len(l.codes) == 0 {
		if o.Existing {
			return nil, errors.New("links workload: existing links, but no map of them")
		}
		l.codes = make([]LinkTarget, o.Links)
		for i := range l.codes {
			code := l.code(int(l.created.Add(1)))
			l.codes[i] = LinkTarget{Code: code, URL: "https://example.com/bench/" + code}
		}
	}
	return l, nil
}

// Name implements Workload: "links/create" or "links/redirect".
func (l *Links) Name() string { return "links/" + l.o.Mode }

// Codes returns the codes redirects follow and their URLs (none in create
// mode).
func (l *Links) Codes() []LinkTarget { return l.codes }

// Prepare implements Preparer: for redirects, every code is created once,
// unless the links exist already.
func (l *Links) Prepare(ctx context.Context, workers int) error {
	if l.o.Mode != LinksRedirect || l.o.Existing {
		return nil
	}
	return Parallel(ctx, len(l.codes), workers, func(ctx context.Context, w, i int) error {
		t := l.codes[i]
		_, err := l.o.Clients[w%len(l.o.Clients)].CreateLink(ctx, t.URL, client.LinkOptions{Code: t.Code})
		if err != nil {
			return fmt.Errorf("create link %s: %w", t.Code, err)
		}
		return nil
	})
}

// Op implements Workload.
func (l *Links) Op(ctx context.Context, worker, i int) error {
	if l.o.Mode == LinksCreate {
		code := l.code(i)
		ctx = client.WithIdempotencyKey(ctx, "link-"+code)
		_, err := l.o.Clients[worker%len(l.o.Clients)].CreateLink(ctx, "https://example.com/bench/"+code, client.LinkOptions{Code: code})
		return OpError("create", err)
	}
	t := l.codes[mix64(uint64(i))%uint64(len(l.codes))]
	loc, err := l.anon[worker%len(l.anon)].Resolve(ctx, t.Code)
	if err != nil {
		return OpError("redirect", err)
	}
	if loc != t.URL {
		return fmt.Errorf("redirect: to %q, want the link's URL", loc)
	}
	return nil
}

// code names link number i of this run.
func (l *Links) code(i int) string { return l.o.CodePrefix + l.run + "-" + strconv.Itoa(i) }

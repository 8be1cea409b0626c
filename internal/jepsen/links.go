package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/parley-chat/parley/client"
)

// Links creates short links to unique URLs through random nodes, each with
// its own idempotency key retried on other nodes (the server picks the
// code). Its checker reads every acknowledged link through every node, and
// the creator's whole list: every acknowledged code present with its URL
// (lost otherwise), no URL under two codes (duplicated: a retry that
// created the link again).
type Links struct {
	runner
	nodes []*client.Client
	name  string

	acked   map[string]string // URL -> acknowledged code
	blocks  map[string]bool   // listing queries that cover every URL tried
	unknown int
}

// NewLinks returns the links workload; its URLs carry name.
func NewLinks(nodes []*client.Client, name string) *Links {
	return &Links{runner: newRunner(), nodes: nodes, name: name, acked: map[string]string{}, blocks: map[string]bool{}}
}

// Name implements Workload.
func (w *Links) Name() string { return "links" }

// Start implements Workload.
func (w *Links) Start(n int) { w.run(n, w.create) }

// create makes one link to a URL no other operation uses.
func (w *Links) create(cl, i int, rng *rand.Rand) {
	// A listing query (contains) of block finds this URL and the 99
	// others of its block, so the checker lists every URL in small pages.
	block := fmt.Sprintf("/%s/c%d/%04d", w.name, cl, i/100)
	u := fmt.Sprintf("https://example.org%s%02d", block, i%100)
	first := rng.IntN(len(w.nodes))
	var l client.Link
	outcome, _ := retry(func(ctx context.Context, attempt int) error {
		var err error
		l, err = w.nodes[(first+attempt)%len(w.nodes)].CreateLink(client.WithIdempotencyKey(ctx, u), u, client.LinkOptions{})
		return err
	})
	w.mu.Lock()
	w.ops++
	w.blocks[block] = true
	switch outcome {
	case Acked:
		w.acked[u] = l.Code
	case Unknown:
		w.unknown++
	}
	w.mu.Unlock()
}

// Check implements Workload.
func (w *Links) Check(_ *client.Client, _ string, r *Result) error {
	r.Workload, r.Linearizable = w.Name(), "n/a"
	r.Ops, r.Acked, r.Unknown = w.ops, len(w.acked), w.unknown
	lost := map[string]bool{}
	for i, c := range w.nodes {
		for u, code := range w.acked {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			l, err := c.LinkInfo(ctx, code)
			cancel()
			var ce *client.Error
			switch {
			case errors.As(err, &ce) && ce.Status == http.StatusNotFound:
				lost[code] = true
				r.Detail += fmt.Sprintf(" node %d: %s missing;", i+1, code)
			case err != nil:
				return fmt.Errorf("link %s through node %d: %w", code, i+1, err)
			case l.URL != u:
				lost[code] = true
				r.Detail += fmt.Sprintf(" node %d: %s points at %s, acknowledged for %s;", i+1, code, l.URL, u)
			}
		}
	}
	r.Lost = len(lost)
	codes, listed := map[string]int{}, 0
	for block := range w.blocks {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		page, err := w.nodes[0].ListLinks(ctx, client.LinkFilter{Query: block})
		cancel()
		if err != nil {
			return fmt.Errorf("list the links of %s: %w", block, err)
		}
		for _, l := range page {
			codes[l.URL]++
		}
		listed += len(page)
	}
	for _, n := range codes {
		r.Duplicated += n - 1
	}
	r.Detail += fmt.Sprintf(" %d links, each read through %d nodes; %d listed", len(w.acked), len(w.nodes), listed)
	return nil
}

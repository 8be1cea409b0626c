package api

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/search"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// refreshingSearch is the real searcher over the rooms' replicator, its
// indexes brought up to the state before each search (what the indexers
// of a node do within a second).
type refreshingSearch struct {
	x  *search.Indexes
	se *search.Searcher
}

func newRefreshingSearch(rep *statetest.Replicator) *refreshingSearch {
	x := search.NewIndexes(search.Config{
		Read: func(ctx context.Context, p uint64, fn func(state.Reader) error) error {
			_, err := rep.Read(ctx, p, true, fn)
			return err
		},
		Replicas: func() map[uint64]any {
			out := map[uint64]any{}
			for _, p := range rep.Partitions() {
				out[p] = 0
			}
			return out
		},
	})
	return &refreshingSearch{x: x, se: search.NewSearcher(search.SearcherConfig{Local: x, Partitions: rep.Partitions,
		ReplicaAddrs: func(uint64) []string { return nil }})}
}

func (r *refreshingSearch) Search(ctx context.Context, user string, req search.Request) (search.Page, error) {
	if err := r.x.Refresh(ctx); err != nil {
		return search.Page{}, err
	}
	return r.se.Search(ctx, user, req)
}

// GET /api/v1/search finds what the caller may read, with highlights; a bad
// query is a 400 naming the parameter; the searches limit answers 429.
func TestSearch_Route(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	ann, bob, cat := e.signUp(t, "ann"), e.signUp(t, "bob"), e.signUp(t, "cat")
	mustStatus(t, e.call(t, ann, http.MethodPost, "/api/v1/rooms", `{"name":"lobby"}`), http.StatusCreated)
	mustStatus(t, e.call(t, ann, http.MethodPost, "/api/v1/rooms", `{"name":"vault","private":true,"password":"password1"}`), http.StatusCreated)
	mustStatus(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/lobby/join", `{}`), http.StatusOK)
	mustStatus(t, e.call(t, ann, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"deploy the rocket"}`), http.StatusCreated)
	mustStatus(t, e.call(t, ann, http.MethodPost, "/api/v1/rooms/vault/messages", `{"text":"rocket codes"}`), http.StatusCreated)
	mustStatus(t, e.call(t, ann, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"rocket whisper","to":["bob"]}`), http.StatusCreated)

	find := func(token, q string) search.Page {
		t.Helper()
		var page search.Page
		mustJSON(t, e.call(t, token, http.MethodGet, "/api/v1/search?q="+url.QueryEscape(q), ""), http.StatusOK, &page)
		return page
	}
	if p := find(ann, "rocket"); len(p.Results) != 3 {
		t.Fatalf("ann finds %+v", p.Results)
	}
	if p := find(bob, "rocket"); len(p.Results) != 2 {
		t.Fatalf("bob finds %+v", p.Results)
	}
	p := find(cat, "ROCKET")
	if len(p.Results) != 1 || p.Results[0].Room != "lobby" || p.Results[0].Message.Text != "deploy the rocket" ||
		len(p.Results[0].Highlights) != 1 || p.Results[0].Highlights[0] != "deploy the <mark>rocket</mark>" {
		t.Fatalf("cat finds %+v", p.Results)
	}
	for _, bad := range []string{"", "q=", "q=x&limit=101", "q=x&limit=-1", "q=x&before=soon", "q=from:"} {
		w := e.call(t, ann, http.MethodGet, "/api/v1/search?"+bad, "")
		if w.Code != http.StatusBadRequest {
			t.Errorf("?%s = %d %s, want 400", bad, w.Code, w.Body)
		}
	}
}

func mustStatus(t *testing.T, w interface {
	Result() *http.Response
}, status int) {
	t.Helper()
	if res := w.Result(); res.StatusCode != status {
		t.Fatalf("status %d, want %d", res.StatusCode, status)
	}
}

// Each search takes a token of the caller's searches limit; a refused bad
// query takes none.
func TestSearch_RateLimited(t *testing.T) {
	e := newFullEnv(t, envOptions{limits: ratelimit.Config{Rates: map[string]ratelimit.Rate{ratelimit.Searches: {N: 1, Per: time.Hour}}}})
	ann := e.signUp(t, "ann")
	mustStatus(t, e.call(t, ann, http.MethodGet, "/api/v1/search?q=from:", ""), http.StatusBadRequest)
	mustStatus(t, e.call(t, ann, http.MethodGet, "/api/v1/search?q=anything", ""), http.StatusOK)
	w := e.call(t, ann, http.MethodGet, "/api/v1/search?q=anything", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second search = %d %s, want 429 with Retry-After", w.Code, w.Body)
	}
}

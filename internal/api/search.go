package api

import (
	"context"
	"net/http"

	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/search"
)

// SearchService is what GET /api/v1/search needs: a search of the rooms
// user may read, merged across partitions (search.Searcher).
type SearchService interface {
	Search(ctx context.Context, user string, req search.Request) (search.Page, error)
}

var _ SearchService = (*search.Searcher)(nil)

// searchRoutes registers the search route.
func (s *Server) searchRoutes() {
	s.handleAuth("GET /api/v1/search", s.searchMessages)
}

// searchMessages serves GET /api/v1/search?q=&room=&from=&before=&after=
// &limit=: the messages the caller may read that match, best first, with
// highlights. Each search takes a token of the caller's searches limit.
func (s *Server) searchMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _, err := queryUint(r, "limit")
	if err == nil && limit > search.MaxLimit {
		limit = search.MaxLimit + 1 // refused by the searcher, naming the bounds
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := search.Request{Q: q.Get("q"), Room: q.Get("room"), From: q.Get("from"), Before: q.Get("before"), After: q.Get("after"), Limit: int(limit)}
	if _, err := search.ParseRequest(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.take(r, ratelimit.Searches); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.search.Search(r.Context(), identity(r).User, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

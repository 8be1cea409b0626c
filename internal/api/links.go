package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// LinkService is what the link routes and redirects need from link.
type LinkService interface {
	Create(ctx context.Context, user, url, code, idempotencyKey string, opts link.Options) (link.Link, error)
	Info(ctx context.Context, code string) (link.Link, error)
	Update(ctx context.Context, user, code string, p link.Patch) (link.Link, error)
	Delete(ctx context.Context, user string, isAdmin bool, code string) error
	Mine(ctx context.Context, user string, f link.Filter) ([]link.Link, error)
	Stats(ctx context.Context, user string, isAdmin bool, code string, days int) (link.Stats, error)
	Resolve(ctx context.Context, code string, v link.Visit) (link.Redirect, error)
}

var _ LinkService = (*link.Service)(nil)

// linkRoutes registers the link routes and the redirects.
func (s *Server) linkRoutes() {
	s.handleAuth("POST /api/v1/links", s.linkCreate)
	s.handleAuth("POST /api/v1/links/import", s.linkImport)
	s.handleAuth("GET /api/v1/links", s.linkList)
	s.handleAuth("GET /api/v1/links/{code}", s.linkInfo)
	s.handleAuth("PATCH /api/v1/links/{code}", s.linkUpdate)
	s.handleAuth("DELETE /api/v1/links/{code}", s.linkDelete)
	s.handleAuth("GET /api/v1/links/{code}/stats", s.linkStats)
	s.handleAuth("GET /api/v1/links/{code}/qr", s.linkQR)
	s.handle("GET /s/{code}", s.redirect)
}

// createLinkRequest is the body of POST /api/v1/links.
type createLinkRequest struct {
	URL string `json:"url"`
	linkOptionsJSON
	writeMeta
}

// linkOptionsJSON are the lifecycle settings a link is created with.
type linkOptionsJSON struct {
	Code           string   `json:"code,omitempty"`
	ExpiresAt      int64    `json:"expires_at,omitempty"` // Unix ms; 0: never
	MaxVisits      uint64   `json:"max_visits,omitempty"`
	RedirectStatus int      `json:"redirect_status,omitempty"`
	Tags           []string `json:"tags,omitempty"`
}

func (o linkOptionsJSON) options() (link.Options, error) {
	opts := link.Options{MaxVisits: o.MaxVisits, Status: o.RedirectStatus, Tags: o.Tags}
	if o.ExpiresAt < 0 {
		return opts, errs.New(errs.Invalid, "expires_at must be Unix milliseconds, not %d", o.ExpiresAt)
	}
	if o.ExpiresAt > 0 {
		opts.ExpiresAt = time.UnixMilli(o.ExpiresAt)
	}
	return opts, nil
}

// linkJSON is a link in responses.
type linkJSON struct {
	Code           string   `json:"code"`
	URL            string   `json:"url"`
	ShortURL       string   `json:"short_url"`
	CreatedBy      string   `json:"created_by"`
	CreatedAt      int64    `json:"created_at"` // Unix ms
	Hits           uint64   `json:"hits"`
	Bots           uint64   `json:"bots"`
	ExpiresAt      int64    `json:"expires_at,omitempty"` // Unix ms; absent: never
	MaxVisits      uint64   `json:"max_visits,omitempty"`
	RedirectStatus int      `json:"redirect_status"`
	Disabled       bool     `json:"disabled"`
	Tags           []string `json:"tags"`
	State          string   `json:"state"`
}

// linksResponse is the body of GET /api/v1/links?mine=true.
type linksResponse struct {
	Links []linkJSON `json:"links"`
}

func (s *Server) linkOf(r *http.Request, l link.Link) linkJSON {
	j := linkJSON{
		Code: l.Code, URL: l.URL, ShortURL: s.shortURL(r, l.Code),
		CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt.UnixMilli(), Hits: l.Hits, Bots: l.Bots,
		MaxVisits: l.MaxVisits, RedirectStatus: l.Status, Disabled: l.Disabled, Tags: l.Tags,
		State: l.State,
	}
	if !l.ExpiresAt.IsZero() {
		j.ExpiresAt = l.ExpiresAt.UnixMilli()
	}
	if j.Tags == nil {
		j.Tags = []string{}
	}
	return j
}

// shortURL is the short URL of code: on the short domain at its root
// (Config.LinksURL), or else under /s/ on publicBase.
func (s *Server) shortURL(r *http.Request, code string) string {
	if s.linksURL != "" {
		return s.linksURL + "/" + code
	}
	return s.publicBase(r) + "/s/" + code
}

// publicBase is the base of the URLs this server hands out (short links,
// hooks): Config.PublicURL, or this request's scheme and host.
func (s *Server) publicBase(r *http.Request) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// linkCreate serves POST /api/v1/links: 201 {code,url,short_url}; 409 when
// the code is taken, 400 for anything but an http(s) URL.
func (s *Server) linkCreate(w http.ResponseWriter, r *http.Request) {
	var body createLinkRequest
	idem, err := s.decodeContent(w, r, s.limits.link, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := body.options()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.take(r, ratelimit.LinkCreates); err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.links.Create(r.Context(), identity(r).User, body.URL, body.Code, idem, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.linkOf(r, l))
}

// linkList serves GET /api/v1/links?mine=true[&tag=][&q=][&state=]: the
// caller's links with visit counts, newest first, filtered by tag, by a
// substring of code or URL, and by state. mine=true is the only listing
// there is, so it may be left out.
func (s *Server) linkList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if v := q.Get("mine"); v != "" && v != "true" && v != "1" {
		s.writeError(w, r, errs.New(errs.Invalid, "mine must be true: only your own links can be listed"))
		return
	}
	f := link.Filter{Tag: q.Get("tag"), Query: q.Get("q"), State: q.Get("state")}
	links, err := s.links.Mine(r.Context(), identity(r).User, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := linksResponse{Links: make([]linkJSON, len(links))}
	for i, l := range links {
		out.Links[i] = s.linkOf(r, l)
	}
	writeJSON(w, http.StatusOK, out)
}

// linkInfo serves GET /api/v1/links/{code}.
func (s *Server) linkInfo(w http.ResponseWriter, r *http.Request) {
	l, err := s.links.Info(r.Context(), r.PathValue("code"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.linkOf(r, l))
}

// linkDelete serves DELETE /api/v1/links/{code}: 204, for the owner or an
// admin.
func (s *Server) linkDelete(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	if err := s.links.Delete(r.Context(), id.User, id.Admin, r.PathValue("code")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// redirect serves GET /s/{code} when the request comes through the mux
// (Redirects serves it before).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request) {
	s.shortLink(w, r, r.PathValue("code"))
}

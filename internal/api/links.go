package api

import (
	"context"
	"html"
	"io"
	"net/http"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// LinkService is what the link routes and redirects need from link.
type LinkService interface {
	Create(ctx context.Context, user, url, code, idempotencyKey string) (link.Link, error)
	Info(ctx context.Context, code string) (link.Link, error)
	Delete(ctx context.Context, user string, isAdmin bool, code string) error
	Mine(ctx context.Context, user string) ([]link.Link, error)
	Resolve(ctx context.Context, code string) (string, error)
}

var _ LinkService = (*link.Service)(nil)

// createLinkRequest is the body of POST /api/v1/links.
type createLinkRequest struct {
	URL  string `json:"url"`
	Code string `json:"code,omitempty"`
	writeMeta
}

// linkJSON is a link in responses.
type linkJSON struct {
	Code      string `json:"code"`
	URL       string `json:"url"`
	ShortURL  string `json:"short_url"`
	CreatedBy string `json:"created_by"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	Hits      uint64 `json:"hits"`
}

// linksResponse is the body of GET /api/v1/links?mine=true.
type linksResponse struct {
	Links []linkJSON `json:"links"`
}

func (s *Server) linkOf(r *http.Request, l link.Link) linkJSON {
	return linkJSON{
		Code: l.Code, URL: l.URL, ShortURL: s.shortBase(r) + "/s/" + l.Code,
		CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt.UnixMilli(), Hits: l.Hits,
	}
}

// shortBase is the base of short URLs: Config.PublicURL, or this request's
// scheme and host.
func (s *Server) shortBase(r *http.Request) string {
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
	if err := s.take(r, ratelimit.LinkCreates); err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.links.Create(r.Context(), identity(r).User, body.URL, body.Code, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.linkOf(r, l))
}

// linkList serves GET /api/v1/links?mine=true: the caller's links with hit
// counts, newest first. mine=true is the only listing there is, so it may
// be left out.
func (s *Server) linkList(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("mine"); v != "" && v != "true" && v != "1" {
		s.writeError(w, r, errs.New(errs.Invalid, "mine must be true: only your own links can be listed"))
		return
	}
	links, err := s.links.Mine(r.Context(), identity(r).User)
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

// redirect serves GET /s/{code}: 302 to the long URL, or a small HTML page
// with 404 for an unknown code.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	url, err := s.links.Resolve(r.Context(), code)
	if errs.Is(err, errs.NotFound) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, notFoundPage(code))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Browsers may keep a 302 only when told to; no-store makes a deleted
	// link stop for them too, and every follow count.
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, url, http.StatusFound)
}

// notFoundPage is the page of an unknown short link.
func notFoundPage(code string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Link not found</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem">
<h1>Link not found</h1>
<p>There is no short link <code>` + html.EscapeString(clip(code)) + `</code>. It may have been deleted, or the address is mistyped.</p>
</body></html>
`
}

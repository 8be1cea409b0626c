package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/qrcode"
)

// updateLinkRequest is the body of PATCH /api/v1/links/{code}: the fields
// to change; absent ones keep their values.
type updateLinkRequest struct {
	URL            *string   `json:"url"`
	ExpiresAt      *int64    `json:"expires_at"` // Unix ms; 0: never
	MaxVisits      *uint64   `json:"max_visits"` // 0: no limit
	RedirectStatus *int      `json:"redirect_status"`
	Tags           *[]string `json:"tags"`
	Disabled       *bool     `json:"disabled"`
	writeMeta
}

func (b updateLinkRequest) patch() (link.Patch, error) {
	p := link.Patch{URL: b.URL, MaxVisits: b.MaxVisits, Status: b.RedirectStatus, Tags: b.Tags, Disabled: b.Disabled}
	if b.ExpiresAt != nil {
		var at time.Time
		switch {
		case *b.ExpiresAt < 0:
			return p, errs.New(errs.Invalid, "expires_at must be Unix milliseconds, or 0 for never, not %d", *b.ExpiresAt)
		case *b.ExpiresAt > 0:
			at = time.UnixMilli(*b.ExpiresAt)
		}
		p.ExpiresAt = &at
	}
	return p, nil
}

// linkUpdate serves PATCH /api/v1/links/{code}: 200 with the link as
// stored; for its owner only.
func (s *Server) linkUpdate(w http.ResponseWriter, r *http.Request) {
	var body updateLinkRequest
	if _, err := s.decodeContent(w, r, s.limits.link, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := body.patch()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.links.Update(r.Context(), identity(r).User, r.PathValue("code"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.linkOf(r, l))
}

// linkStatsJSON is the body of GET /api/v1/links/{code}/stats.
type linkStatsJSON struct {
	Code      string      `json:"code"`
	Visits    uint64      `json:"visits"`
	Bots      uint64      `json:"bots"`
	Direct    uint64      `json:"direct"`
	Days      []dayJSON   `json:"days"`
	Referrers []countJSON `json:"referrers"`
	Browsers  []countJSON `json:"browsers"`
	OS        []countJSON `json:"os"`
}

type dayJSON struct {
	Date   string `json:"date"` // YYYY-MM-DD, UTC
	Visits uint64 `json:"visits"`
	Bots   uint64 `json:"bots"`
}

type countJSON struct {
	Name   string `json:"name"`
	Visits uint64 `json:"visits"`
}

func countsJSON(list []link.Count) []countJSON {
	out := make([]countJSON, len(list))
	for i, c := range list {
		out[i] = countJSON{Name: c.Name, Visits: c.N}
	}
	return out
}

// defaultStatsDays is the window of daily visits when days is absent.
const defaultStatsDays = 30

// linkStats serves GET /api/v1/links/{code}/stats[?days=N]: aggregated
// visits, for the link's owner or an admin.
func (s *Server) linkStats(w http.ResponseWriter, r *http.Request) {
	days, present, err := queryUint(r, "days")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !present {
		days = defaultStatsDays
	}
	if days > link.MaxStatsDays {
		days = link.MaxStatsDays + 1 // refused below, naming the limit
	}
	id := identity(r)
	st, err := s.links.Stats(r.Context(), id.User, id.Admin, r.PathValue("code"), int(days))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := linkStatsJSON{
		Code: st.Code, Visits: st.Visits, Bots: st.Bots, Direct: st.Direct,
		Days:      make([]dayJSON, len(st.Days)),
		Referrers: countsJSON(st.Referrers), Browsers: countsJSON(st.Browsers), OS: countsJSON(st.Systems),
	}
	for i, d := range st.Days {
		out.Days[i] = dayJSON{Date: link.Day(d.Day).Format(time.DateOnly), Visits: d.Humans + d.Bots, Bots: d.Bots}
	}
	writeJSON(w, http.StatusOK, out)
}

// linkQR serves GET /api/v1/links/{code}/qr?format=png|svg[&scale=N]: a
// QR code of the link's short URL (png by default, scale pixels per
// module, 8 by default).
func (s *Server) linkQR(w http.ResponseWriter, r *http.Request) {
	f := qrcode.Format(r.URL.Query().Get("format"))
	switch f {
	case "":
		f = qrcode.PNG
	case qrcode.PNG, qrcode.SVG:
	default:
		s.writeError(w, r, errs.New(errs.Invalid, "format must be png or svg, not %q", clip(string(f))))
		return
	}
	scale, present, err := queryUint(r, "scale")
	if err == nil && present && (scale < qrcode.MinScale || scale > qrcode.MaxScale) {
		err = errs.New(errs.Invalid, "scale must be %d to %d pixels per module", qrcode.MinScale, qrcode.MaxScale)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !present {
		scale = qrcode.DefaultScale
	}
	l, err := s.links.Info(r.Context(), r.PathValue("code"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	img, err := qrcode.Render(s.shortURL(r, l.Code), f, int(scale))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Content-Length", strconv.Itoa(len(img)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, max-age=300")
	_, _ = w.Write(img)
}

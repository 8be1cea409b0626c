package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Link is a short link.
type Link struct {
	Code      string `json:"code"`
	URL       string `json:"url"`
	ShortURL  string `json:"short_url"`
	CreatedBy string `json:"created_by"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	// Hits counts visits (redirects served, bots included); it lags them
	// by a few seconds. Bots counts those flagged as bots.
	Hits uint64 `json:"hits"`
	Bots uint64 `json:"bots"`
	// ExpiresAt is when the link stops redirecting, Unix ms; 0: never.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// MaxVisits is the visits after which it stops; 0: no limit.
	MaxVisits uint64 `json:"max_visits,omitempty"`
	// RedirectStatus is 301, 302, 307 or 308.
	RedirectStatus int      `json:"redirect_status"`
	Disabled       bool     `json:"disabled"`
	Tags           []string `json:"tags"`
	// State is "active" (it redirects), "disabled", "expired" or
	// "exhausted" (max_visits reached), as of the answer.
	State string `json:"state"`
}

// LinkOptions qualify CreateLink.
type LinkOptions struct {
	// Code is the short code wanted (1-64 of A-Z a-z 0-9 _ -); "" lets the
	// server pick one.
	Code string `json:"code,omitempty"`
	// ExpiresAt is when the link stops redirecting, Unix ms (in the
	// future); 0: never.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// MaxVisits is the visits after which it stops (enforced
	// approximately; docs/API.md says how); 0: no limit.
	MaxVisits uint64 `json:"max_visits,omitempty"`
	// RedirectStatus is 301, 302, 307 or 308; 0: 302.
	RedirectStatus int `json:"redirect_status,omitempty"`
	// Tags label the link (at most 10, each 1-32 bytes, no spaces, commas
	// or semicolons); stored in lower case.
	Tags []string `json:"tags,omitempty"`
}

// CreateLink shortens longURL (an http or https URL; 400 otherwise, also
// when it points back at this server's /s/). A code taken is an *Error
// with status 409.
func (c *Client) CreateLink(ctx context.Context, longURL string, opts LinkOptions) (Link, error) {
	in := struct {
		URL string `json:"url"`
		LinkOptions
	}{longURL, opts}
	var l Link
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/links", in, &l)
	return l, err
}

// LinkFilter selects links for ListLinks; zero fields select all.
type LinkFilter struct {
	Tag   string // links with this tag
	Query string // links whose code or URL contains this, in any case
	State string // "active", "disabled", "expired" or "exhausted"
}

// MyLinks returns the caller's links with visit counts, newest first.
func (c *Client) MyLinks(ctx context.Context) ([]Link, error) {
	return c.ListLinks(ctx, LinkFilter{})
}

// ListLinks returns the caller's links that match f, newest first.
func (c *Client) ListLinks(ctx context.Context, f LinkFilter) ([]Link, error) {
	var out struct {
		Links []Link `json:"links"`
	}
	q := url.Values{"mine": {"true"}}
	for k, v := range map[string]string{"tag": f.Tag, "q": f.Query, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	_, err := c.getJSON(ctx, "/api/v1/links", q, &out)
	return out.Links, err
}

// LinkInfo returns a link; 404 when there is none.
func (c *Client) LinkInfo(ctx context.Context, code string) (Link, error) {
	var l Link
	_, err := c.sendJSON(ctx, http.MethodGet, linkPath(code), nil, &l)
	return l, err
}

// LinkUpdate names the fields UpdateLink changes; nil fields keep their
// values.
type LinkUpdate struct {
	URL            *string   `json:"url,omitempty"`
	ExpiresAt      *int64    `json:"expires_at,omitempty"` // Unix ms; 0: never
	MaxVisits      *uint64   `json:"max_visits,omitempty"` // 0: no limit
	RedirectStatus *int      `json:"redirect_status,omitempty"`
	Tags           *[]string `json:"tags,omitempty"`
	Disabled       *bool     `json:"disabled,omitempty"`
}

// UpdateLink changes a link (its owner only: 403 for anyone else) and
// returns it as stored. It takes effect at once on the node asked and
// within 2 s on every other.
func (c *Client) UpdateLink(ctx context.Context, code string, u LinkUpdate) (Link, error) {
	var l Link
	_, err := c.sendJSON(ctx, http.MethodPatch, linkPath(code), u, &l)
	return l, err
}

// SetLinkDisabled disables (true) or enables (false) a link.
func (c *Client) SetLinkDisabled(ctx context.Context, code string, disabled bool) (Link, error) {
	return c.UpdateLink(ctx, code, LinkUpdate{Disabled: &disabled})
}

// DeleteLink deletes a link (its creator or an admin may).
func (c *Client) DeleteLink(ctx context.Context, code string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, linkPath(code), nil, nil)
	return err
}

// LinkStats are a link's visits, aggregated (no visitor is stored).
type LinkStats struct {
	Code   string `json:"code"`
	Visits uint64 `json:"visits"`
	Bots   uint64 `json:"bots"`
	// Direct counts human visits without a referrer.
	Direct uint64 `json:"direct"`
	// Days are the days of the window asked with visits, oldest first.
	Days []struct {
		Date   string `json:"date"` // YYYY-MM-DD, UTC
		Visits uint64 `json:"visits"`
		Bots   uint64 `json:"bots"`
	} `json:"days"`
	// Referrers, Browsers and OS break human visits down, most first.
	Referrers []NameCount `json:"referrers"`
	Browsers  []NameCount `json:"browsers"`
	OS        []NameCount `json:"os"`
}

// NameCount is a number of visits under a name.
type NameCount struct {
	Name   string `json:"name"`
	Visits uint64 `json:"visits"`
}

// LinkStats returns a link's visit statistics with the daily visits of
// the last days days (0: the server's default, 30); for the link's owner or
// an admin.
func (c *Client) LinkStats(ctx context.Context, code string, days int) (LinkStats, error) {
	var st LinkStats
	q := url.Values{}
	if days != 0 {
		q.Set("days", strconv.Itoa(days))
	}
	_, err := c.getJSON(ctx, linkPath(code)+"/stats", q, &st)
	return st, err
}

// LinkQR returns a QR code of a link's short URL as an image: format "png"
// or "svg" ("" for png), scale pixels per module (0 for the default, 8).
func (c *Client) LinkQR(ctx context.Context, code, format string, scale int) ([]byte, error) {
	q := url.Values{}
	if format != "" {
		q.Set("format", format)
	}
	if scale != 0 {
		q.Set("scale", strconv.Itoa(scale))
	}
	path := linkPath(code) + "/qr"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return c.getBytes(ctx, path)
}

// ImportReport is the answer of ImportLinks: one line per CSV line.
type ImportReport struct {
	Created int          `json:"created"`
	Failed  int          `json:"failed"`
	Lines   []ImportLine `json:"lines"`
}

// ImportLine is the outcome of one line of an import: the link created, or
// the error that refused it.
type ImportLine struct {
	Line     int    `json:"line"`
	Code     string `json:"code,omitempty"`
	URL      string `json:"url,omitempty"`
	ShortURL string `json:"short_url,omitempty"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// ImportLinks creates links from a CSV file (docs/API.md: url first, or a
// header naming the columns; at most 1000 links, 1 MiB). A file that does
// not parse is an *Error (nothing created); otherwise the report says, line
// by line, what was created and what was refused. With an idempotency key
// (WithIdempotencyKey), a retry creates nothing twice.
func (c *Client) ImportLinks(ctx context.Context, csv io.Reader) (ImportReport, error) {
	var rep ImportReport
	const path = "/api/v1/links/import"
	resp, err := c.do(ctx, http.MethodPost, path, csv, http.Header{"Content-Type": {"text/csv"}})
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("parley: POST %s: decoding response: %w", path, err)
	}
	return rep, nil
}

// LinkPreview returns the HTML page GET /s/{code}+ shows: where the link
// goes, without following it or counting a visit.
func (c *Client) LinkPreview(ctx context.Context, code string) (string, error) {
	b, err := c.getBytes(ctx, "/s/"+url.PathEscape(code)+"+")
	return string(b), err
}

// getBytes sends a GET and returns the response body.
func (c *Client) getBytes(ctx context.Context, path string) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parley: GET %s: %w", path, err)
	}
	return b, nil
}

// Resolve follows nothing: it asks GET /s/{code} and returns the Location
// the server redirects to. An unknown code is an *Error with status 404
// and code "not_found"; a link that is disabled, expired or used up one
// with status 410 and code "gone". Resolving counts as a visit.
func (c *Client) Resolve(ctx context.Context, code string) (string, error) {
	loc, _, err := c.ResolveStatus(ctx, code)
	return loc, err
}

// ResolveStatus is Resolve that also returns the redirect's status (301,
// 302, 307 or 308).
func (c *Client) ResolveStatus(ctx context.Context, code string) (string, int, error) {
	path := "/s/" + url.PathEscape(code)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.current()+path, nil)
	if err != nil {
		return "", 0, fmt.Errorf("parley: GET %s: %w", path, err)
	}
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("parley: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		_ = drain(resp)
		return "", 0, &Error{Status: http.StatusNotFound, Code: "not_found", Message: "link not found"}
	case resp.StatusCode == http.StatusGone:
		_ = drain(resp)
		return "", 0, &Error{Status: http.StatusGone, Code: "gone", Message: "the link is disabled, expired or used up"}
	case resp.StatusCode/100 != 3:
		if resp.StatusCode/100 == 2 {
			_ = drain(resp)
			return "", 0, fmt.Errorf("parley: GET %s: status %d is not a redirect", path, resp.StatusCode)
		}
		return "", 0, decodeError(resp)
	}
	loc := resp.Header.Get("Location")
	_ = drain(resp)
	if loc == "" {
		return "", 0, fmt.Errorf("parley: GET %s: redirect without a Location", path)
	}
	return loc, resp.StatusCode, nil
}

func linkPath(code string) string {
	return "/api/v1/links/" + url.PathEscape(code)
}

package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Link is a short link.
type Link struct {
	Code      string `json:"code"`
	URL       string `json:"url"`
	ShortURL  string `json:"short_url"`
	CreatedBy string `json:"created_by"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	// Hits counts redirects; it lags them by a few seconds.
	Hits uint64 `json:"hits"`
}

// LinkOptions qualify CreateLink.
type LinkOptions struct {
	// Code is the short code wanted (1-64 of A-Z a-z 0-9 _ -); "" lets the
	// server pick one.
	Code string
}

// CreateLink shortens longURL (an http or https URL; 400 otherwise). A
// code taken is an *Error with status 409.
func (c *Client) CreateLink(ctx context.Context, longURL string, opts LinkOptions) (Link, error) {
	in := struct {
		URL  string `json:"url"`
		Code string `json:"code,omitempty"`
	}{longURL, opts.Code}
	var l Link
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/links", in, &l)
	return l, err
}

// MyLinks returns the caller's links with hit counts, newest first.
func (c *Client) MyLinks(ctx context.Context) ([]Link, error) {
	var out struct {
		Links []Link `json:"links"`
	}
	_, err := c.getJSON(ctx, "/api/v1/links", url.Values{"mine": {"true"}}, &out)
	return out.Links, err
}

// LinkInfo returns a link; 404 when there is none.
func (c *Client) LinkInfo(ctx context.Context, code string) (Link, error) {
	var l Link
	_, err := c.sendJSON(ctx, http.MethodGet, linkPath(code), nil, &l)
	return l, err
}

// DeleteLink deletes a link (its creator or an admin may).
func (c *Client) DeleteLink(ctx context.Context, code string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, linkPath(code), nil, nil)
	return err
}

// Resolve follows nothing: it asks GET /s/{code} and returns the Location
// the server redirects to. An unknown code is an *Error with status 404 and
// code "not_found". Resolving counts as a redirect in the link's hits.
func (c *Client) Resolve(ctx context.Context, code string) (string, error) {
	path := "/s/" + url.PathEscape(code)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return "", fmt.Errorf("parley: GET %s: %w", path, err)
	}
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("parley: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		_ = drain(resp)
		return "", &Error{Status: http.StatusNotFound, Code: "not_found", Message: "link not found"}
	case resp.StatusCode/100 != 3:
		if resp.StatusCode/100 == 2 {
			_ = drain(resp)
			return "", fmt.Errorf("parley: GET %s: status %d is not a redirect", path, resp.StatusCode)
		}
		return "", decodeError(resp)
	}
	loc := resp.Header.Get("Location")
	_ = drain(resp)
	if loc == "" {
		return "", fmt.Errorf("parley: GET %s: redirect without a Location", path)
	}
	return loc, nil
}

func linkPath(code string) string {
	return "/api/v1/links/" + url.PathEscape(code)
}

package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// SearchQuery is a search of the messages the caller may read (GET
// /api/v1/search, docs/API.md "Search").
type SearchQuery struct {
	// Q is the query: words, "phrases", from:USER, in:ROOM.
	Q string
	// Room and From restrict to one room and one sender.
	Room, From string
	// Before and After bound the message time (zero: unbounded).
	Before, After time.Time
	// Limit is the most results (0: the server's default, 20; at most 100).
	Limit int
}

// SearchResult is one message a search found.
type SearchResult struct {
	Room  string  `json:"room"`
	Seq   uint64  `json:"seq"`
	Score float64 `json:"score"`
	// Highlights are fragments of the text with the words found in
	// <mark></mark>, the rest HTML-escaped.
	Highlights []string `json:"highlights,omitempty"`
	// Message is the message as history shows it now.
	Message Event `json:"message"`
}

// Search returns the messages matching q that the caller may read, best
// first.
func (c *Client) Search(ctx context.Context, q SearchQuery) ([]SearchResult, error) {
	v := url.Values{"q": {q.Q}}
	for name, s := range map[string]string{"room": q.Room, "from": q.From} {
		if s != "" {
			v.Set(name, s)
		}
	}
	for name, t := range map[string]time.Time{"before": q.Before, "after": q.After} {
		if !t.IsZero() {
			v.Set(name, strconv.FormatInt(t.UnixMilli(), 10))
		}
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page struct {
		Results []SearchResult `json:"results"`
	}
	_, err := c.getJSON(ctx, "/api/v1/search", v, &page)
	return page.Results, err
}

package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// ChangeResult is the answer to a change of a message: the seq and time of
// the event it appended, Seq 0 when nothing changed (a reaction given
// twice, a message already pinned or deleted).
type ChangeResult struct {
	Seq uint64 `json:"seq"`
	Ts  int64  `json:"ts"` // Unix ms
}

// Thread is a page of a thread: its first message as it is now and replies
// in seq order.
type Thread struct {
	Root    Event   `json:"root"`
	Replies []Event `json:"replies"`
}

// MentionsPage is a page of the messages that mention the caller; Next is
// the After of the following page.
type MentionsPage struct {
	Mentions []Event `json:"mentions"`
	Next     string  `json:"next"`
}

func messagePath(room string, seq uint64, suffix string) string {
	return roomPath(room, "/messages/"+strconv.FormatUint(seq, 10)+suffix)
}

// Message returns event seq of the room as the caller may see it; a message
// comes with its current text, reactions, thread and pin.
func (c *Client) Message(ctx context.Context, room string, seq uint64) (Event, error) {
	var e Event
	_, err := c.getJSON(ctx, messagePath(room, seq, ""), nil, &e)
	return e, err
}

// Edit replaces the text of the caller's message seq (403 when not the
// author or the edit window is over).
func (c *Client) Edit(ctx context.Context, room string, seq uint64, text string) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodPatch, messagePath(room, seq, ""), map[string]string{"text": text}, &r)
	return r, err
}

// DeleteMessage deletes message seq: its author, the room's owner or an
// admin may. Its text is removed; history keeps a tombstone.
func (c *Client) DeleteMessage(ctx context.Context, room string, seq uint64) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodDelete, messagePath(room, seq, ""), nil, &r)
	return r, err
}

// React adds the caller's reaction emoji (an emoji or a :shortcode:) to
// message seq.
func (c *Client) React(ctx context.Context, room string, seq uint64, emoji string) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodPut, messagePath(room, seq, "/reactions/"+url.PathEscape(emoji)), nil, &r)
	return r, err
}

// Unreact takes back the caller's reaction emoji to message seq.
func (c *Client) Unreact(ctx context.Context, room string, seq uint64, emoji string) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodDelete, messagePath(room, seq, "/reactions/"+url.PathEscape(emoji)), nil, &r)
	return r, err
}

// Thread returns the first message of a thread and up to limit (0: the
// server's default) of its replies after seq after.
func (c *Client) Thread(ctx context.Context, room string, root, after uint64, limit int) (Thread, error) {
	q := url.Values{}
	if after != 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var t Thread
	_, err := c.getJSON(ctx, messagePath(room, root, "/thread"), q, &t)
	return t, err
}

// Pin pins message seq of the room.
func (c *Client) Pin(ctx context.Context, room string, seq uint64) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodPut, roomPath(room, "/pins/"+strconv.FormatUint(seq, 10)), nil, &r)
	return r, err
}

// Unpin unpins message seq of the room.
func (c *Client) Unpin(ctx context.Context, room string, seq uint64) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodDelete, roomPath(room, "/pins/"+strconv.FormatUint(seq, 10)), nil, &r)
	return r, err
}

// Pins returns the room's pinned messages in seq order.
func (c *Client) Pins(ctx context.Context, room string) ([]Event, error) {
	var out struct {
		Pins []Event `json:"pins"`
	}
	_, err := c.getJSON(ctx, roomPath(room, "/pins"), nil, &out)
	return out.Pins, err
}

// Mentions returns a page of the messages that mention the caller across
// their rooms, oldest first: the latest limit (0: the server's default)
// without after, else the first limit after the cursor after (a previous
// page's Next).
func (c *Client) Mentions(ctx context.Context, after string, limit int) (MentionsPage, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p MentionsPage
	_, err := c.getJSON(ctx, "/api/v1/mentions", q, &p)
	return p, err
}

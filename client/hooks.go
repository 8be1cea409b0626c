package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// BotPrefix starts the Sender of every message posted through an incoming
// webhook ("hook:deploy"); no username contains ':', so such a sender is
// always a bot, never a user.
const BotPrefix = "hook:"

// IsBot reports whether an event's sender is a bot (an incoming webhook).
func IsBot(sender string) bool { return strings.HasPrefix(sender, BotPrefix) }

// Hook is an incoming webhook of a room. Secret and URL are set only in the
// answer that made it: the cluster keeps only the secret's digest.
type Hook struct {
	ID        string `json:"id"`
	Room      string `json:"room"`
	Name      string `json:"name"`
	Creator   string `json:"creator"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	// Key is "ROOM.ID", the first segment of the URL after /api/v1/hooks/.
	Key    string `json:"key"`
	Secret string `json:"secret,omitempty"`
	// URL is where to POST {"text": ...} (or Slack's {"text", "username"}).
	URL string `json:"url,omitempty"`
}

// CreateHook adds an incoming webhook to room whose posts show the bot
// name name; for the room's owner or an admin. It is not idempotent: a
// retry makes a second hook.
func (c *Client) CreateHook(ctx context.Context, room, name string) (Hook, error) {
	var h Hook
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/hooks"), map[string]string{"name": name}, &h)
	return h, err
}

// Hooks lists room's incoming webhooks without their secrets.
func (c *Client) Hooks(ctx context.Context, room string) ([]Hook, error) {
	var r struct {
		Hooks []Hook `json:"hooks"`
	}
	_, err := c.getJSON(ctx, roomPath(room, "/hooks"), nil, &r)
	return r.Hooks, err
}

// RevokeHook revokes room's webhook id: its URL stops working at once.
func (c *Client) RevokeHook(ctx context.Context, room, id string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, roomPath(room, "/hooks/"+url.PathEscape(id)), nil, nil)
	return err
}

// PostHook posts text through a hook given by its key and secret (the last
// two segments of its URL); username, when not empty, is the bot name of
// this post. The Client needs no token for it.
func (c *Client) PostHook(ctx context.Context, key, secret, text, username string) (PostResult, error) {
	body := map[string]string{"text": text}
	if username != "" {
		body["username"] = username
	}
	var r PostResult
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/hooks/"+url.PathEscape(key)+"/"+url.PathEscape(secret), body, &r)
	return r, err
}

// ExportRoom copies room's whole history to w as JSON Lines, one event per
// line in seq order, as the server streams it (its owner or an admin may).
// A server that fails after it began ends the body with an
// {"error":{...}} line, which ExportRoom returns as an *Error; the lines
// before it are written.
func (c *Client) ExportRoom(ctx context.Context, room string, w io.Writer) (lines int, err error) {
	resp, err := c.do(ctx, http.MethodGet, roomPath(room, "/export"), nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return copyJSONLines(w, resp.Body)
}

// copyJSONLines copies lines from r to w until an error line, which it
// returns decoded.
func copyJSONLines(w io.Writer, r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if e := errorLine(line); e != nil {
				return n, e
			}
			if _, werr := w.Write(line); werr != nil {
				return n, werr
			}
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("parley: export: %w", err)
		}
	}
}

// errorLine decodes an export's error line; nil for an event line.
func errorLine(line []byte) *Error {
	if !bytes.HasPrefix(line, []byte(`{"error":`)) {
		return nil
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &body) != nil || body.Error.Code == "" {
		return nil
	}
	return &Error{Status: http.StatusOK, Code: body.Error.Code, Message: body.Error.Message, Retryable: body.Error.Retryable}
}

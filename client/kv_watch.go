package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// WatchOptions say what a kv watch follows and from where.
type WatchOptions struct {
	// Key watches one key; when empty, Prefix watches every key that
	// starts with it (every key when Prefix is empty too).
	Key    string
	Prefix string
	// After resumes from a token (KVWatch.Token, KVChange.Token): every
	// change after it, none twice. Empty starts from now.
	After string
}

// KVChange is one revision of one partition as a watch delivers it: every
// change that revision made to the watched keys, and the resume token
// after it.
type KVChange struct {
	Partition uint64    `json:"partition"`
	Revision  uint64    `json:"revision"`
	Events    []KVEvent `json:"events"`
	Token     string    `json:"token"`
}

// KVWatch is an open kv watch (Server-Sent Events of GET
// /api/v1/kv/watch). Changes come per partition in revision order, each
// once, none skipped. A token is one revision per partition ("3:120,7:98"):
// a watch resumed from it on any node continues exactly after it.
type KVWatch struct {
	body  io.ReadCloser
	r     *bufio.Reader
	token string
}

// ErrWatchEnded is what KVWatch.Next returns once the server ended the
// stream without an error event (the node shut down): resume from Token.
var ErrWatchEnded = errors.New("parley: kv watch ended")

// KVWatch opens a watch and waits for its ready event. An After older than
// what the server keeps fails Next (or this call) with a 410 *Error of code
// history_compacted: start again from now.
func (c *Client) KVWatch(ctx context.Context, opts WatchOptions) (*KVWatch, error) {
	q := url.Values{}
	if opts.Key != "" {
		q.Set("key", opts.Key)
	} else {
		q.Set("prefix", opts.Prefix)
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	resp, err := c.do(ctx, http.MethodGet, "/api/v1/kv/watch?"+q.Encode(), nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return nil, err
	}
	w := &KVWatch{body: resp.Body, r: bufio.NewReader(resp.Body), token: opts.After}
	event, data, err := w.read()
	if err == nil && event != "ready" {
		err = fmt.Errorf("parley: kv watch: first event %q, want ready", event)
	}
	if err == nil {
		var ready struct {
			Token string `json:"token"`
		}
		err = json.Unmarshal(data, &ready)
		w.token = ready.Token
	}
	if err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	return w, nil
}

// Token returns the resume token after the last change Next returned (the
// starting token before the first).
func (w *KVWatch) Token() string { return w.token }

// Next returns the next change. The server's error event (such as
// history_compacted) comes back as an *Error.
func (w *KVWatch) Next() (KVChange, error) {
	event, data, err := w.read()
	if err != nil {
		return KVChange{}, err
	}
	if event != "kv" {
		return KVChange{}, fmt.Errorf("parley: kv watch: unexpected event %q", event)
	}
	var ch KVChange
	if err := json.Unmarshal(data, &ch); err != nil {
		return KVChange{}, fmt.Errorf("parley: kv watch: malformed change: %w", err)
	}
	w.token = ch.Token
	return ch, nil
}

// Close ends the watch.
func (w *KVWatch) Close() error { return w.body.Close() }

// read returns the next event (skipping comments); an error event is
// returned as its *Error.
func (w *KVWatch) read() (event string, data []byte, err error) {
	for {
		line, err := w.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", nil, ErrWatchEnded
			}
			return "", nil, fmt.Errorf("parley: kv watch: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && event != "":
			if event == "error" {
				return "", nil, watchError(data)
			}
			return event, data, nil
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		}
	}
}

// watchError turns an error event into an *Error with the status its code
// has in responses.
func watchError(data []byte) error {
	var f struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &f)
	status := map[string]int{"history_compacted": http.StatusGone, "invalid": http.StatusBadRequest, "not_found": http.StatusNotFound}[f.Code]
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	return &Error{Status: status, Code: f.Code, Message: f.Message, Retryable: status == http.StatusServiceUnavailable}
}

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// KVWatchService is what kv watches need: follow the keys m selects from a
// resume token (kv.FormatToken; "" for now), handing the output to w,
// until ctx ends, w fails or an event needed is gone
// (errs.HistoryCompacted).
type KVWatchService interface {
	// Check refuses a watch Watch would refuse at once (errs.Invalid),
	// before it takes a stream slot.
	Check(m kv.Match, after string) error
	Watch(ctx context.Context, m kv.Match, after string, w kv.Watcher) error
}

// ssePing is how often an idle watch stream gets a comment line, so that
// proxies and clients see it alive.
const ssePing = 15 * time.Second

// kvWatchSSE serves GET /api/v1/kv/watch?key=|prefix=&after=: the watch as
// Server-Sent Events. "ready" carries the starting token; each "kv" event
// is one revision of one partition (stream.KVRevision), its id the resume
// token after it, so an EventSource resumes by itself (Last-Event-ID
// overrides after); an "error" event ends the stream (history_compacted:
// start again from now). Each stream takes one of the user's stream slots.
func (s *Server) kvWatchSSE(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("key") && !q.Has("prefix") {
		s.writeError(w, r, errs.New(errs.Invalid, "give key= or prefix= (an empty prefix watches every key)"))
		return
	}
	m := kv.Match{Key: q.Get("key"), Prefix: q.Get("prefix")}
	if q.Has("key") && m.Key == "" {
		s.writeError(w, r, errs.New(errs.Invalid, "key is empty"))
		return
	}
	after := q.Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after = id
	}
	if err := s.kvWatch.Check(m, after); err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.hold(r.Context(), ratelimit.Streams, identity(r).User)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the request timeouts
	_ = rc.SetReadDeadline(time.Time{})
	sw := &sseWatcher{w: w, rc: rc}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go sw.ping(ctx, cancel)
	err = s.kvWatch.Watch(ctx, m, after, sw)
	switch {
	case !sw.started() && r.Context().Err() == nil:
		s.writeError(w, r, err)
	case err != nil && r.Context().Err() == nil && ctx.Err() == nil:
		if errs.CodeOf(err) == errs.Internal {
			s.log.Error("kv watch failed", "err", err)
		}
		sw.send("error", "", stream.KVErrorFrameFor("", err))
	}
}

// sseWatcher writes a watch's output as Server-Sent Events.
type sseWatcher struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu    sync.Mutex
	begun bool
}

var _ kv.Watcher = (*sseWatcher)(nil)

func (sw *sseWatcher) started() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.begun
}

// Ready implements kv.Watcher: the response starts.
func (sw *sseWatcher) Ready(pos map[uint64]uint64) error {
	token := kv.FormatToken(pos)
	b, _ := json.Marshal(map[string]string{"token": token})
	return sw.send("ready", token, b)
}

// Events implements kv.Watcher: one "kv" event per revision.
func (sw *sseWatcher) Events(p uint64, events []kv.Event, pos map[uint64]uint64) error {
	for _, rev := range stream.SplitRevisions(p, events, pos) {
		b, err := json.Marshal(rev)
		if err != nil {
			return err
		}
		if err := sw.send("kv", rev.Token, b); err != nil {
			return err
		}
	}
	return nil
}

// send writes one event and flushes it.
func (sw *sseWatcher) send(event, id string, data []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.begun {
		h := sw.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		sw.w.WriteHeader(http.StatusOK)
		sw.begun = true
	}
	if id != "" {
		if _, err := fmt.Fprintf(sw.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(sw.w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// ping writes a comment every ssePing once the stream began; a failed
// write ends the watch.
func (sw *sseWatcher) ping(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(ssePing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sw.mu.Lock()
		var err error
		if sw.begun {
			if _, err = fmt.Fprint(sw.w, ": ping\n\n"); err == nil {
				err = sw.rc.Flush()
			}
		}
		sw.mu.Unlock()
		if err != nil {
			cancel()
			return
		}
	}
}

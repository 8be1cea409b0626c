package api

import (
	"context"
	"errors"
	"sync"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/stream"
)

// kvStreams are one stream connection's kv watches, by id: each runs on
// its own goroutine until unsubscribed, replaced, failed or the connection
// ends, and queues its frames on the connection's subscriber.
type kvStreams struct {
	s   *Server
	ctx context.Context
	sub *stream.Subscriber

	mu      sync.Mutex
	watches map[string]*kvStreamWatch
	wg      sync.WaitGroup
}

// kvStreamWatch is one running watch of a connection.
type kvStreamWatch struct{ cancel context.CancelFunc }

func (s *Server) newKVStreams(ctx context.Context, sub *stream.Subscriber) *kvStreams {
	return &kvStreams{s: s, ctx: ctx, sub: sub, watches: map[string]*kvStreamWatch{}}
}

// subscribe starts the watch k, replacing one of the same id.
func (ks *kvStreams) subscribe(k stream.KVSubscription) {
	id := k.Name()
	if ks.s.kvWatch == nil {
		ks.sub.Send(stream.KVErrorFrameFor(id, errs.New(errs.NotFound, "kv watches are not served here")))
		return
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if old := ks.watches[id]; old != nil {
		old.cancel()
	} else if len(ks.watches) >= stream.MaxKVSubscriptions {
		ks.sub.Send(stream.KVErrorFrameFor(id, errs.New(errs.Invalid, "at most %d kv watches per connection", stream.MaxKVSubscriptions)))
		return
	}
	ctx, cancel := context.WithCancel(ks.ctx)
	kw := &kvStreamWatch{cancel: cancel}
	ks.watches[id] = kw
	ks.wg.Go(func() {
		defer ks.forget(id, kw)
		err := ks.s.kvWatch.Watch(ctx, k.Match(), k.After, wsWatcher{id: id, sub: ks.sub})
		if err != nil && ctx.Err() == nil && !errors.Is(err, errSubscriberGone) {
			if errs.CodeOf(err) == errs.Internal {
				ks.s.log.Error("kv watch failed", "watch", id, "err", err)
			}
			ks.sub.Send(stream.KVErrorFrameFor(id, err))
		}
	})
}

// forget drops watch id once it ended, unless a new one took its place.
func (ks *kvStreams) forget(id string, kw *kvStreamWatch) {
	kw.cancel()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.watches[id] == kw {
		delete(ks.watches, id)
	}
}

// unsubscribe ends watch id.
func (ks *kvStreams) unsubscribe(id string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if kw := ks.watches[id]; kw != nil {
		kw.cancel()
		delete(ks.watches, id)
	}
}

// close ends every watch and waits for them.
func (ks *kvStreams) close() {
	ks.mu.Lock()
	for id, kw := range ks.watches {
		kw.cancel()
		delete(ks.watches, id)
	}
	ks.mu.Unlock()
	ks.wg.Wait()
}

// errSubscriberGone ends a watch whose connection no longer takes frames.
var errSubscriberGone = errs.New(errs.Unavailable, "the connection no longer takes frames")

// wsWatcher queues a watch's output on a stream connection.
type wsWatcher struct {
	id  string
	sub *stream.Subscriber
}

// Ready implements kv.Watcher.
func (w wsWatcher) Ready(pos map[uint64]uint64) error {
	if !w.sub.Send(stream.EncodeKVReady(w.id, kv.FormatToken(pos))) {
		return errSubscriberGone
	}
	return nil
}

// Events implements kv.Watcher: one kv_event frame per revision.
func (w wsWatcher) Events(p uint64, events []kv.Event, pos map[uint64]uint64) error {
	for _, rev := range stream.SplitRevisions(p, events, pos) {
		if !w.sub.Send(stream.EncodeKVRevision(w.id, rev)) {
			return errSubscriberGone
		}
	}
	return nil
}

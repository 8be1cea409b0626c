package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/chat"
)

// Source is what the Dispatcher needs from the rooms domain
// (*chat.Service).
type Source interface {
	// DueDeliveries returns up to limit outbox entries of partition p due
	// at nowMs, passing over those skip reports.
	DueDeliveries(ctx context.Context, p uint64, nowMs int64, limit int, skip func(chat.Delivery) bool) ([]chat.Delivery, error)
	// RecordDelivery records an attempt's outcome in partition p.
	RecordDelivery(ctx context.Context, p uint64, d chat.Delivery, status int, errText string, ok bool) error
}

var _ Source = (*chat.Service)(nil)

// Config configures a Dispatcher. Zero fields take the defaults.
type Config struct {
	// Timeout bounds one attempt, from dialing to the end of the answer
	// (10 s).
	Timeout time.Duration
	// Concurrency is the most attempts in flight on the node (16).
	Concurrency int
	// PerHook is the most attempts in flight to one hook (4), so that a
	// slow receiver holds at most that many of the node's.
	PerHook int
	// MaxResponse is how much of an answer is read, then dropped (64 KiB).
	MaxResponse int64
	// Now is the clock (time.Now).
	Now func() time.Time
	// Log receives the Dispatcher's warnings (slog.Default()).
	Log *slog.Logger
}

// Dispatcher delivers the outboxes of the partitions its node leads. The
// node calls Dispatch for each led partition every tick; every attempt runs
// on a goroutine of its own, at most Config.Concurrency at once, and ends
// with a RecordDelivery proposal. Wait waits for them all.
type Dispatcher struct {
	src    Source
	client *http.Client
	cfg    Config

	wg  sync.WaitGroup
	sem chan struct{}

	mu sync.Mutex
	// tick counts Dispatch calls; busy maps an entry in flight to -1 and
	// an entry just recorded to the tick when it was, so that a Dispatch
	// whose read began before the record was applied does not take the
	// entry again.
	tick int64
	busy map[string]int64
	// perHook counts the attempts in flight to each hook.
	perHook map[string]int
}

// NewDispatcher returns a Dispatcher reading and recording through src and
// connecting only where guard allows.
func NewDispatcher(src Source, guard *Guard, cfg Config) *Dispatcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.PerHook <= 0 {
		cfg.PerHook = 4
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = 64 << 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	tr := &http.Transport{
		Proxy:                  nil, // never through a proxy of the environment: the guard checks the real peer
		DialContext:            guard.Dialer(cfg.Timeout).DialContext,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	client := &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		// A redirect is an answer (3xx, a failed attempt), never followed:
		// following it would reach a URL nobody checked.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Dispatcher{src: src, client: client, cfg: cfg, sem: make(chan struct{}, cfg.Concurrency), busy: map[string]int64{}, perHook: map[string]int{}}
}

// entryKey names an outbox entry.
func entryKey(d chat.Delivery) string {
	return d.Room + "/" + strconv.FormatUint(d.Seq, 10) + "/" + d.Hook + "/" + strconv.FormatInt(d.Due, 10)
}

// Dispatch starts an attempt at every entry of partition p's outbox that
// is due and not in flight, as many as the concurrency allows. ctx bounds
// the attempts it starts too: give the node's, cancelled when it stops.
func (d *Dispatcher) Dispatch(ctx context.Context, p uint64) error {
	d.mu.Lock()
	d.tick++
	tick := d.tick
	for k, t := range d.busy {
		if t >= 0 && t < tick-1 {
			delete(d.busy, k)
		}
	}
	d.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	due, err := d.src.DueDeliveries(rctx, p, d.cfg.Now().UnixMilli(), d.cfg.Concurrency, func(del chat.Delivery) bool {
		return !d.free(entryKey(del), del.Hook, tick)
	})
	cancel()
	if err != nil {
		return err
	}
	for _, del := range due {
		k := entryKey(del)
		if !d.take(k, del.Hook, tick) {
			continue
		}
		select {
		case d.sem <- struct{}{}:
		default:
			d.release(k, del.Hook, -1)
			return nil // at capacity: the rest waits for the next tick
		}
		d.wg.Go(func() {
			defer func() { <-d.sem }()
			d.attempt(ctx, p, del, k)
		})
	}
	return nil
}

// Wait waits for the attempts in flight.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// attempt makes one attempt at del and records it.
func (d *Dispatcher) attempt(ctx context.Context, p uint64, del chat.Delivery, key string) {
	status, errText, ok := 0, "", false
	if del.Drop == "" {
		status, errText = d.post(ctx, del)
		ok = errText == ""
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := d.src.RecordDelivery(rctx, p, del, status, errText, ok)
	cancel()
	if err != nil && ctx.Err() == nil {
		// The entry stays due: the next tick tries it again.
		d.cfg.Log.Warn("recording a webhook delivery failed; it will be attempted again", "partition", p, "delivery", del.Payload.ID, "err", err)
	}
	d.mu.Lock()
	tick := d.tick
	d.mu.Unlock()
	d.release(key, del.Hook, tick)
}

// free reports whether an attempt at entry k of hook may start: it is not
// in flight, was not recorded since this tick's read began, and its hook
// has fewer than PerHook attempts in flight.
func (d *Dispatcher) free(k, hook string, tick int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.freeLocked(k, hook, tick)
}

// freeLocked is free with d.mu held.
func (d *Dispatcher) freeLocked(k, hook string, tick int64) bool {
	if t, ok := d.busy[k]; ok && (t < 0 || t >= tick) {
		return false
	}
	return d.perHook[hook] < d.cfg.PerHook
}

// take marks entry k of hook busy if it is free.
func (d *Dispatcher) take(k, hook string, tick int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.freeLocked(k, hook, tick) {
		return false
	}
	d.busy[k] = -1
	d.perHook[hook]++
	return true
}

// release ends an attempt at entry k of hook: recorded at tick, or never
// started (tick < 0).
func (d *Dispatcher) release(k, hook string, tick int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tick < 0 {
		delete(d.busy, k)
	} else {
		d.busy[k] = tick
	}
	if d.perHook[hook]--; d.perHook[hook] <= 0 {
		delete(d.perHook, hook)
	}
}

// post sends del once: the receiver's status, and what went wrong ("" for
// a 2xx answer).
func (d *Dispatcher) post(ctx context.Context, del chat.Delivery) (int, string) {
	body, err := json.Marshal(del.Payload)
	if err != nil {
		return 0, fmt.Sprintf("encode: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "bad URL"
	}
	ts := d.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Parley-Webhook/1")
	req.Header.Set(HeaderDelivery, del.Payload.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(del.Secret, ts, body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, describe(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, d.cfg.MaxResponse))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Sprintf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, ""
}

// describe turns a failed request into a log line without the URL (which
// the owner knows, and which may hold a credential).
func describe(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	var timeout interface{ Timeout() bool }
	if errors.As(err, &timeout) && timeout.Timeout() {
		return "timed out"
	}
	return err.Error()
}

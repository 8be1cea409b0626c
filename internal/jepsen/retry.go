package jepsen

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/parley-chat/parley/client"
)

// Outcome is what a client learned of a write.
type Outcome int

const (
	// Acked: the cluster acknowledged the write.
	Acked Outcome = iota
	// Failed: the cluster refused it for good; it had no effect.
	Failed
	// Unknown: every attempt timed out or lost its connection; the write
	// may have taken effect, or may yet.
	Unknown
)

// Retry policy of every workload's writes.
const (
	attemptTimeout = 1500 * time.Millisecond
	retryFor       = 5 * time.Second
	retryPause     = 100 * time.Millisecond
)

// retry calls f with attempt numbers 0, 1, ... (the caller picks a node per
// attempt, so a retry goes elsewhere) until it succeeds, fails for good, or
// retryFor passed. Every attempt of one write must carry the same
// idempotency key. An attempt that never reached a server (connection
// refused) had no effect; any other failure leaves the outcome unknown
// unless a later attempt settles it.
func retry(f func(ctx context.Context, attempt int) error) (Outcome, error) {
	deadline := time.Now().Add(retryFor)
	outcome := Failed
	var err error
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		err = f(ctx, attempt)
		cancel()
		if err == nil {
			return Acked, nil
		}
		if !retryable(err) {
			return outcome, err
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !refusedBeforeWork(err) {
			outcome = Unknown
		}
		if time.Now().After(deadline) {
			return outcome, err
		}
		time.Sleep(retryPause)
	}
}

// retryable reports whether a write may be sent again with the same
// idempotency key: the server said so, or the request failed in transport
// or ran out of time (its outcome unknown).
var retryable = client.IsRetryableAttempt

// refusedBeforeWork reports whether the server refused the request before
// doing anything: a limit (429).
func refusedBeforeWork(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == 429
}

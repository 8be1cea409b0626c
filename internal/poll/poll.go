// Package poll holds the one polling helper of the tests: wait until a
// condition holds, or fail the test. Tests of concurrent code (clusters,
// transports, gossip, streams) wait for what they cannot be told about;
// they all wait the same way, with the same failure message.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Check is a condition Until waits for: a func() error holds when it
// returns nil (its last error tells why not, in the failure), a func() bool
// when it returns true.
type Check interface {
	func() error | func() bool
}

// maxPause is the longest pause between two checks.
const maxPause = 50 * time.Millisecond

// errFalse is what a func() bool condition reports while false.
var errFalse = errors.New("condition still false")

// Until calls check until it holds and returns how long that took. It
// checks at once, then after a millisecond, doubling the pause up to 50 ms;
// once within has passed it fails t with what and check's last error.
func Until[C Check](t testing.TB, within time.Duration, what string, check C) time.Duration {
	t.Helper()
	start := time.Now()
	pause := time.Millisecond
	for {
		err := holds(check)
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}

// holds runs check once.
func holds[C Check](check C) error {
	switch c := any(check).(type) {
	case func() error:
		return c()
	case func() bool:
		if c() {
			return nil
		}
	}
	return errFalse
}

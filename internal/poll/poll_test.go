package poll

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of stopping the
// test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestUntil(t *testing.T) {
	t.Run("error check holds", func(t *testing.T) {
		n := 0
		Until(t, time.Second, "third call", func() error {
			if n++; n < 3 {
				return errors.New("not yet")
			}
			return nil
		})
		if n != 3 {
			t.Fatalf("%d calls, want 3", n)
		}
	})
	t.Run("bool check holds", func(t *testing.T) {
		n := 0
		Until(t, time.Second, "third call", func() bool { n++; return n == 3 })
		if n != 3 {
			t.Fatalf("%d calls, want 3", n)
		}
	})
	t.Run("fails with the last error", func(t *testing.T) {
		r := &recorder{TB: t}
		calls := 0
		Until(r, 30*time.Millisecond, "the impossible", func() error {
			calls++
			if r.failed != "" {
				return nil // Fatalf was called: let Until return
			}
			return fmt.Errorf("attempt %d", calls)
		})
		if !strings.HasPrefix(r.failed, "the impossible: not within 30ms: attempt ") {
			t.Fatalf("failure %q", r.failed)
		}
	})
}

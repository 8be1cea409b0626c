//go:build !failpoints

package clock

import "time"

// wallClock reads the wall clock, without a monotonic reading.
func wallClock() time.Time { return time.Now().Round(0) }

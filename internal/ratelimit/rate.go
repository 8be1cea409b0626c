package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is the shape of a token bucket: N tokens every Per, in bursts of up
// to N. The zero Rate (or any with N or Per not positive) is off: no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// Off reports whether r limits nothing.
func (r Rate) Off() bool { return r.N <= 0 || r.Per <= 0 }

// String returns r as ParseRate reads it: "60/10s", "30/h", "off".
func (r Rate) String() string {
	if r.Off() {
		return "off"
	}
	return strconv.Itoa(r.N) + "/" + perString(r.Per)
}

// perString writes a period the short way: "s", "min", "h" for one unit,
// else a Go duration ("10s", "15m0s").
func perString(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	}
	return d.String()
}

// ParseRate reads "N/PERIOD": N events a PERIOD, in bursts of up to N.
// PERIOD is a unit (s, sec, m, min, h, hour) or a Go duration ("10s",
// "15m"). "off" and "0" turn the limit off.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Rate{}, nil
	}
	ns, per, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 0 {
		return Rate{}, fmt.Errorf("rate %q: want N/PERIOD like 60/10s or 30/h, or off", s)
	}
	d, err := parsePer(per)
	if err != nil {
		return Rate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	if n == 0 {
		return Rate{}, nil
	}
	return Rate{N: n, Per: d}, nil
}

func parsePer(s string) (time.Duration, error) {
	switch s {
	case "s", "sec", "second":
		return time.Second, nil
	case "m", "min", "minute":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Millisecond {
		return 0, fmt.Errorf("period %q: want s, min, h or a duration of at least 1ms", s)
	}
	return d, nil
}

// Set implements flag.Value.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// wait is how long r takes to refill deficit tokens, rounded up to the
// nanosecond.
func (r Rate) wait(deficit float64) time.Duration {
	if deficit <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(deficit * float64(r.Per) / float64(r.N)))
}

// refill returns tokens after elapsed nanoseconds of refilling, capped at
// the burst.
func (r Rate) refill(tokens float64, elapsed int64) float64 {
	if elapsed <= 0 {
		return tokens
	}
	return min(tokens+float64(elapsed)*float64(r.N)/float64(r.Per), float64(r.N))
}

package multiraft

import (
	"testing"
	"time"
)

func TestSyncTimes_Slow(t *testing.T) {
	const threshold = 500 * time.Millisecond
	ms := func(d ...int) []time.Duration {
		out := make([]time.Duration, len(d))
		for i, x := range d {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		name    string
		took    []time.Duration // one sample every 100 ms
		after   time.Duration   // from the last sample to the check
		running time.Duration   // the oldest synced commit still running
		want    bool
	}{
		{"no samples", nil, 0, 0, false},
		{"too few samples", ms(900), 0, 0, false},
		{"two slow samples", ms(900, 900), 0, 0, true},
		{"median slow", ms(900, 10, 800, 700, 20), 0, 0, true},
		{"one stall proves nothing", ms(10, 3000), 0, 0, false},
		{"one stall among many proves nothing", ms(10, 3000, 10, 10, 10), 0, 0, false},
		{"half slow is not slow", ms(900, 10, 900, 10), 0, 0, false},
		{"a slow commit and a long-running one", ms(900), 0, 700 * time.Millisecond, true},
		{"a long-running commit alone", nil, 0, 5 * time.Second, false},
		{"a hung commit alone", nil, 0, 5*time.Second + time.Millisecond, true},
		{"a hung commit among fast ones", ms(10, 10, 10, 10), 0, 6 * time.Second, true},
		{"a short-running commit among slow ones", ms(900, 10), 0, 100 * time.Millisecond, false},
		{"median at the threshold is not slow", ms(500, 500, 500), 0, 0, false},
		{"slow samples age out of the window", ms(900, 900, 900), slowSyncWindow + time.Second, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s syncTimes
			now := time.Unix(1000, 0)
			for _, d := range tc.took {
				now = now.Add(100 * time.Millisecond)
				s.add(now, d)
			}
			if got := s.slow(now.Add(tc.after), threshold, tc.running); got != tc.want {
				t.Fatalf("slow = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		var s syncTimes
		now := time.Unix(1000, 0)
		for range 5 {
			s.add(now, time.Hour)
		}
		if s.slow(now, -1, time.Hour) {
			t.Fatal("slow with the check off")
		}
	})
}

package ratelimit

import (
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rate
		str  string
	}{
		{"60/10s", Rate{60, 10 * time.Second}, "60/10s"},
		{"30/h", Rate{30, time.Hour}, "30/h"},
		{"10/min", Rate{10, time.Minute}, "10/min"},
		{"10/m", Rate{10, time.Minute}, "10/min"},
		{"5/s", Rate{5, time.Second}, "5/s"},
		{"7/15m", Rate{7, 15 * time.Minute}, "7/15m0s"},
		{" 3/hour ", Rate{3, time.Hour}, "3/h"},
		{"off", Rate{}, "off"},
		{"0", Rate{}, "off"},
		{"0/s", Rate{}, "off"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.str {
				t.Fatalf("String() = %q, want %q", got.String(), tc.str)
			}
			if again, err := ParseRate(got.String()); err != nil || again != got {
				t.Fatalf("round trip of %q: %v, %v", got.String(), again, err)
			}
		})
	}
	for _, bad := range []string{"", "60", "-1/s", "x/s", "5/", "5/fortnight", "5/0s", "5/1us", "5/-1s"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if r, err := ParseRate(bad); err == nil {
				t.Fatalf("ParseRate(%q) = %v, want an error", bad, r)
			}
		})
	}
}

func TestRate_Set(t *testing.T) {
	var r Rate
	if err := r.Set("4/s"); err != nil || r != (Rate{4, time.Second}) {
		t.Fatalf("Set: %v, %v", r, err)
	}
	if err := r.Set("nope"); err == nil || r != (Rate{4, time.Second}) {
		t.Fatalf("a bad Set changed the rate to %v (err %v)", r, err)
	}
}

func TestConfig_Share(t *testing.T) {
	c := Config{Rates: map[string]Rate{
		"posts": {N: 64, Per: time.Hour}, "logins": {N: 5, Per: time.Minute}, "off": {}, "one": {N: 1, Per: time.Second},
	}, Slots: map[string]int{"streams": 8}}
	s := c.Share(4)
	want := map[string]Rate{"posts": {N: 16, Per: time.Hour}, "logins": {N: 1, Per: time.Minute}, "off": {}, "one": {N: 1, Per: time.Second}}
	for name, r := range want {
		if s.Rates[name] != r {
			t.Errorf("share of %s = %v, want %v", name, s.Rates[name], r)
		}
	}
	if s.Slots["streams"] != 8 || c.Rates["posts"].N != 64 {
		t.Errorf("share changed the slots or the original: %v, %v", s.Slots, c.Rates)
	}
	if got := c.Share(0).Rates["posts"].N; got != 64 {
		t.Errorf("share of no nodes = %d, want the whole rate", got)
	}
}

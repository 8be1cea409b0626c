package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBenchNATS(t *testing.T) {
	const path = "parley-bench nats-publish"
	t.Run("defaults match bench kv", func(t *testing.T) {
		o, err := ParseBenchNATS(path, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{defaultNATSURL}) || o.Clients != 16 || o.Replicas != 3 ||
			o.ValueSize != 256 || o.Keys != 10000 || o.Duration != 10*time.Second {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, err := ParseBenchNATS(path, []string{
			"--urls", "nats://127.0.0.1:1", "--urls", "nats://127.0.0.1:2", "--clients", "256", "--replicas", "1",
			"--value-size", "2000", "--keys", "5", "--stream-prefix", "x-", "--duration", "3s", "--warmup", "1s",
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{"nats://127.0.0.1:1", "nats://127.0.0.1:2"}) || o.Clients != 256 || o.Replicas != 1 ||
			o.ValueSize != 2000 || o.Keys != 5 || o.StreamPrefix != "x-" || o.Duration != 3*time.Second || o.Warmup != time.Second {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("help shows urls, not servers or token", func(t *testing.T) {
		_, err := ParseBenchNATS(path, []string{"-h"}, nil)
		h, ok := err.(*helpError)
		if !ok || !strings.Contains(h.text, "--urls") || strings.Contains(h.text, "--servers") || strings.Contains(h.text, "--token") {
			t.Errorf("help = %v", err)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{
			{"--urls", "127.0.0.1:4222"}, {"--replicas", "0"}, {"--replicas", "7"}, {"--value-size", "-1"},
			{"--keys", "0"}, {"--stream-prefix", "a.b"}, {"--clients", "0"}, {"--requests", "-1"},
		} {
			if _, err := ParseBenchNATS(path, args, nil); err == nil {
				t.Errorf("%v: no error", args)
			}
		}
	})
}

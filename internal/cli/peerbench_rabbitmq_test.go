package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBenchRabbitMQ(t *testing.T) {
	const path = "parley-bench rabbitmq-queue"
	t.Run("defaults match bench queue", func(t *testing.T) {
		o, err := ParseBenchRabbitMQ(path, nil, envMap(map[string]string{"PARLEY_SERVER": "http://h:1"}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{defaultAMQPURL}) || o.Clients != 16 || o.Producers != 16 || o.Queues != 1 ||
			o.Size != 200 || o.Prefetch != 1 || o.Wait != 5*time.Second || o.Duration != 10*time.Second {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, err := ParseBenchRabbitMQ(path, []string{
			"--urls", "amqp://u:p@127.0.0.1:1/,amqp://u:p@127.0.0.1:2/", "--clients", "64", "--producers", "8",
			"--queues", "4", "--size", "2000", "--prefetch", "10", "--wait", "2s", "--requests", "100", "--json", "r.json", "-q",
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Servers) != 2 || o.Clients != 64 || o.Producers != 8 || o.Queues != 4 || o.Size != 2000 ||
			o.Prefetch != 10 || o.Wait != 2*time.Second || o.Requests != 100 || o.Duration != 0 || o.JSON != "r.json" || !o.Quiet {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("help shows urls, not servers or token", func(t *testing.T) {
		_, err := ParseBenchRabbitMQ(path, []string{"-h"}, nil)
		h, ok := err.(*helpError)
		if !ok || !strings.Contains(h.text, "--urls") || strings.Contains(h.text, "--servers") || strings.Contains(h.text, "--token") {
			t.Errorf("help = %v", err)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{
			{"--urls", "http://127.0.0.1:5672"}, {"--urls", "amqp://"}, {"--queues", "0"}, {"--queues", "4", "--clients", "2"},
			{"--size", "0"}, {"--prefetch", "0"}, {"--wait", "0s"}, {"--clients", "0"}, {"--duration", "0s"}, {"extra"},
		} {
			if _, err := ParseBenchRabbitMQ(path, args, nil); err == nil {
				t.Errorf("%v: no error", args)
			}
		}
	})
}

func TestRedactedURLs(t *testing.T) {
	got := redactedURLs([]string{"amqp://guest:guest@127.0.0.1:5672/", "nats://127.0.0.1:4222"})
	want := []string{"amqp://guest:xxx@127.0.0.1:5672/", "nats://127.0.0.1:4222"}
	if !slices.Equal(got, want) {
		t.Errorf("redactedURLs = %q, want %q", got, want)
	}
}

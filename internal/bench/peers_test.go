package bench

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://bench:secret@127.0.0.1:5672/": "amqp://bench:xxx@127.0.0.1:5672/",
		"amqp://bench@127.0.0.1:5672/":        "amqp://bench@127.0.0.1:5672/",
		"nats://127.0.0.1:4222":               "nats://127.0.0.1:4222",
		"amqp://u:p@ss:w@h/":                  "amqp://u:xxx@h/",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

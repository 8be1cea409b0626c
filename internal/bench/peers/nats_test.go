package peers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/parley-chat/parley/internal/bench"
)

func TestNewNATSPublish_Invalid(t *testing.T) {
	ok := bench.NATSPublishOptions{URLs: []string{"nats://127.0.0.1:4222"}, StreamPrefix: "b-", Replicas: 3, ValueSize: 256, Keys: 10}
	if _, err := NewNATSPublish(ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for name, change := range map[string]func(*bench.NATSPublishOptions){
		"no urls":        func(o *bench.NATSPublishOptions) { o.URLs = nil },
		"http url":       func(o *bench.NATSPublishOptions) { o.URLs = []string{"http://127.0.0.1:4222"} },
		"no replicas":    func(o *bench.NATSPublishOptions) { o.Replicas = 0 },
		"six replicas":   func(o *bench.NATSPublishOptions) { o.Replicas = 6 },
		"negative value": func(o *bench.NATSPublishOptions) { o.ValueSize = -1 },
		"no keys":        func(o *bench.NATSPublishOptions) { o.Keys = 0 },
		"dotted prefix":  func(o *bench.NATSPublishOptions) { o.StreamPrefix = "a.b" },
	} {
		o := ok
		change(&o)
		if _, err := NewNATSPublish(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestNATSPublish_Stores runs the workload against a one-server JetStream:
// every operation is a message the stream stored, of the value size, and
// Close deletes the stream.
func TestNATSPublish_Stores(t *testing.T) {
	url := startNATS(t)
	w, err := NewNATSPublish(bench.NATSPublishOptions{URLs: []string{url}, StreamPrefix: "bench-test-", Replicas: 1, ValueSize: 100, Keys: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep := runFor(t, w, 4, 80)
	if rep.Ops != 80 || rep.Errors != 0 {
		t.Fatalf("ops %d, errors %d (%v); want 80, 0", rep.Ops, rep.Errors, rep.ErrorKinds)
	}

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, w.Stream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 80 || info.State.NumSubjects > 7 || info.Config.Storage != jetstream.FileStorage || info.Config.Replicas != 1 {
		t.Errorf("stream holds %d messages on %d subjects (%v storage, %d replicas); want 80 on at most 7, file, 1",
			info.State.Msgs, info.State.NumSubjects, info.Config.Storage, info.Config.Replicas)
	}
	m, err := s.GetMsg(ctx, 1)
	if err != nil || len(m.Data) != 100 {
		t.Errorf("first message: %v, %d bytes; want 100", err, len(m.Data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, w.Stream()); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("after Close: %v; want stream not found", err)
	}
}

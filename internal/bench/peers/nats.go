package peers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/parley-chat/parley/internal/bench"
)

// NATSPublish is a publish workload against NATS JetStream: each operation
// publishes one message to a file-backed stream of Replicas replicas and
// waits for its ack, which the stream leader sends once a quorum stored
// it. It is the peer of `parley bench kv --mix put` (a replicated, durable
// write acknowledged to the client), to compare the two on the same
// machine in the same run.
type NATSPublish struct {
	o      bench.NATSPublishOptions
	stream string
	value  []byte
	conns  []*nats.Conn          // one per worker, from Prepare
	js     []jetstream.JetStream // one per worker
	mu     sync.Mutex            // guards closed
	closed bool
}

// Compile-time checks that NATSPublish is a workload that prepares.
var (
	_ bench.Workload = (*NATSPublish)(nil)
	_ bench.Preparer = (*NATSPublish)(nil)
)

// NewNATSPublish checks o and returns the workload.
func NewNATSPublish(o bench.NATSPublishOptions) (*NATSPublish, error) {
	switch {
	case len(o.URLs) == 0:
		return nil, errors.New("nats publish workload: no URLs")
	case o.Replicas < 1 || o.Replicas > 5:
		return nil, fmt.Errorf("nats publish workload: replicas %d: want 1 to 5", o.Replicas)
	case o.ValueSize < 0:
		return nil, fmt.Errorf("nats publish workload: value size %d: must not be negative", o.ValueSize)
	case o.Keys < 1:
		return nil, fmt.Errorf("nats publish workload: keys %d: want at least 1", o.Keys)
	case strings.ContainsAny(o.StreamPrefix, ".*> \t"):
		return nil, fmt.Errorf("nats publish workload: stream prefix %q: no dots, wildcards or spaces", o.StreamPrefix)
	}
	for _, u := range o.URLs {
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			return nil, fmt.Errorf("nats publish workload: URL %q: want nats://host:port", u)
		}
	}
	return &NATSPublish{o: o, stream: o.StreamPrefix + bench.RunID(), value: bench.KVValue(o.ValueSize)}, nil
}

// Name implements bench.Workload.
func (n *NATSPublish) Name() string { return "nats-publish" }

// Stream returns the stream's name.
func (n *NATSPublish) Stream() string { return n.stream }

// Prepare implements bench.Preparer: it connects a client per worker and
// creates the stream: file storage, Replicas replicas, no limits (the
// benchmark deletes it at Close).
func (n *NATSPublish) Prepare(ctx context.Context, workers int) error {
	n.conns = make([]*nats.Conn, workers)
	n.js = make([]jetstream.JetStream, workers)
	err := bench.Parallel(ctx, workers, 16, func(ctx context.Context, _, w int) error {
		url := n.o.URLs[w%len(n.o.URLs)]
		nc, err := nats.Connect(url, nats.Name("parley bench"), nats.Timeout(5*time.Second))
		if err != nil {
			return fmt.Errorf("connect %s: %w", url, err)
		}
		n.conns[w] = nc
		js, err := jetstream.New(nc)
		if err != nil {
			return fmt.Errorf("jetstream on %s: %w", url, err)
		}
		n.js[w] = js
		return nil
	})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = n.js[0].CreateStream(cctx, jetstream.StreamConfig{
		Name:     n.stream,
		Subjects: []string{n.stream + ".>"},
		Storage:  jetstream.FileStorage,
		Replicas: n.o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("create stream %s with %d replicas: %w", n.stream, n.o.Replicas, err)
	}
	return nil
}

// Op implements bench.Workload: one publish, acknowledged by the stream.
func (n *NATSPublish) Op(ctx context.Context, worker, i int) error {
	key, _ := bench.KVOp(bench.MixPut, n.o.Keys, i)
	subj := n.stream + "." + strconv.Itoa(key)
	if _, err := n.js[worker].Publish(ctx, subj, n.value); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// Close deletes the stream and closes the connections.
func (n *NATSPublish) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var err error
	if len(n.js) > 0 && n.js[0] != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if e := n.js[0].DeleteStream(ctx, n.stream); e != nil && !errors.Is(e, jetstream.ErrStreamNotFound) {
			err = fmt.Errorf("delete stream %s: %w", n.stream, e)
		}
		cancel()
	}
	for _, nc := range n.conns {
		if nc != nil {
			nc.Close()
		}
	}
	return err
}

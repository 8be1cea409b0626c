package bench

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
)

// NATSPublishOptions shape the NATS JetStream publish workload.
type NATSPublishOptions struct {
	// URLs are client URLs of the cluster's servers, e.g.
	// "nats://127.0.0.1:4222"; worker w connects to URLs[w % len(URLs)],
	// as KV spreads workers over Parley nodes.
	URLs []string
	// StreamPrefix starts the stream's name; a random run id follows. The
	// stream takes the subjects <name>.>.
	StreamPrefix string
	// Replicas is the stream's replication factor (3 for R3).
	Replicas int
	// ValueSize is the size of every message in bytes.
	ValueSize int
	// Keys is the number of subjects: operation i publishes to subject
	// <stream>.<key>, the key picked from i as KV picks its key.
	Keys int
}

// NATSPublish is a publish workload against NATS JetStream: each operation
// publishes one message to a file-backed stream of Replicas replicas and
// waits for its ack, which the stream leader sends once a quorum stored
// it. It is the peer of `parley bench kv --mix put` (a replicated, durable
// write acknowledged to the client), to compare the two on the same
// machine in the same run.
type NATSPublish struct {
	o      NATSPublishOptions
	stream string
	value  []byte
	conns  []*nats.Conn          // one per worker, from Prepare
	js     []jetstream.JetStream // one per worker
	mu     sync.Mutex            // guards closed
	closed bool
}

// Compile-time checks that NATSPublish is a workload that prepares.
var (
	_ Workload = (*NATSPublish)(nil)
	_ Preparer = (*NATSPublish)(nil)
)

// NewNATSPublish checks o and returns the workload.
func NewNATSPublish(o NATSPublishOptions) (*NATSPublish, error) {
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
	v := make([]byte, o.ValueSize)
	for i := range v {
		v[i] = 'a' + byte(i%26) // the bytes KV stores
	}
	return &NATSPublish{o: o, stream: o.StreamPrefix + runID(), value: v}, nil
}

// Name implements Workload.
func (n *NATSPublish) Name() string { return "nats-publish" }

// Stream returns the stream's name.
func (n *NATSPublish) Stream() string { return n.stream }

// Prepare implements Preparer: it connects a client per worker and
// creates the stream: file storage, Replicas replicas, no limits (the
// benchmark deletes it at Close).
func (n *NATSPublish) Prepare(ctx context.Context, workers int) error {
	n.conns = make([]*nats.Conn, workers)
	n.js = make([]jetstream.JetStream, workers)
	err := parallel(ctx, workers, 16, func(ctx context.Context, _, w int) error {
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

// Op implements Workload: one publish, acknowledged by the stream.
func (n *NATSPublish) Op(ctx context.Context, worker, i int) error {
	key := mix64(uint64(i)) % uint64(n.o.Keys)
	subj := n.stream + "." + strconv.FormatUint(key, 10)
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

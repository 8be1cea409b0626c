package bench

import (
	"net/http"
	"strings"
	"time"
)

// The options of the workloads that run Parley's benchmarks against the
// systems it is compared with. They are declared here, beside the
// workloads they copy, and run by internal/bench/peers, which alone links
// the etcd, NATS and RabbitMQ clients: cmd/parley-bench imports it,
// cmd/parley never does.

// EtcdKVOptions shape the etcd KV workload.
type EtcdKVOptions struct {
	// Endpoints are the client URLs of the etcd members, e.g.
	// "http://127.0.0.1:2379"; worker w uses Endpoints[w % len(Endpoints)],
	// as KV spreads workers over Parley nodes.
	Endpoints []string
	// HTTP sends every request. Give it the transport the Parley KV
	// workload uses, so both sides pay the same client costs.
	HTTP *http.Client
	// Mix, ValueSize, Keys and KeyPrefix work as in KVOptions.
	Mix       string
	ValueSize int
	Keys      int
	KeyPrefix string
}

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

// RabbitMQQueueOptions shape the RabbitMQ quorum queue workload.
type RabbitMQQueueOptions struct {
	// URLs are AMQP URLs of the cluster's nodes, e.g.
	// "amqp://guest:guest@127.0.0.1:5672/"; consumer w connects to
	// URLs[w % len(URLs)] and producer p to URLs[(p+1) % len(URLs)], as the
	// queue workload spreads its clients over Parley nodes.
	URLs []string
	// Queues is the number of quorum queues; consumer w and producer p use
	// queue w % Queues and p % Queues.
	Queues int
	// Producers is the number of producers (at least Queues).
	Producers int
	// Size is the length of every message body in bytes.
	Size int
	// Prefetch is each consumer's QoS prefetch count: how many unacked
	// messages the broker may push ahead. 1 makes a consumer take one
	// message at a time, as a Parley receive does.
	Prefetch int
	// Wait is how long a consumer waits for a delivery before the
	// operation counts as failed.
	Wait time.Duration
	// QueuePrefix starts every queue name; a random run id follows.
	QueuePrefix string
}

// RedactURL returns url with the password of its user info, if any,
// replaced by xxx, for messages and reports.
func RedactURL(url string) string {
	s := strings.Index(url, "://")
	at := strings.LastIndex(url, "@")
	if s < 0 || at < s {
		return url
	}
	c := strings.Index(url[s+3:at], ":")
	if c < 0 {
		return url
	}
	return url[:s+3+c+1] + "xxx" + url[at:]
}

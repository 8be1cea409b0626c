// Command parley-bench runs Parley's benchmark workloads against the
// systems it is compared with: `parley-bench etcd-kv`, `nats-publish` and
// `rabbitmq-queue`, the twins of `parley bench kv` and `parley bench queue`.
// It is a binary of its own so that parley, the server, never links the
// etcd, NATS and RabbitMQ clients. The command line lives in internal/cli;
// main only hands it the process and the peer workloads.
package main

import (
	"context"
	"os"

	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/bench/peers"
	"github.com/parley-chat/parley/internal/cli"
)

// main runs the command line; the cli package handles signals.
func main() {
	os.Exit(cli.PeerBenchMain(context.Background(), peerWorkloads(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// peerWorkloads opens the workloads of internal/bench/peers for the
// command line.
func peerWorkloads() cli.Peers {
	return cli.Peers{
		EtcdKV: func(o bench.EtcdKVOptions) (cli.EtcdKVWorkload, error) {
			return peers.NewEtcdKV(o)
		},
		NATSPublish: func(o bench.NATSPublishOptions) (cli.NATSPublishWorkload, error) {
			return peers.NewNATSPublish(o)
		},
		RabbitMQQueue: func(o bench.RabbitMQQueueOptions) (cli.RabbitMQQueueWorkload, error) {
			return peers.NewRabbitMQQueue(o)
		},
	}
}

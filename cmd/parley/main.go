// Command parley runs Parley: nodes (`parley serve`, `parley dev`), client
// commands and benchmarks of Parley itself (the benchmarks against etcd,
// NATS and RabbitMQ are cmd/parley-bench). Everything lives in
// internal/cli; main only hands it the process.
package main

import (
	"context"
	"os"

	"github.com/parley-chat/parley/internal/cli"
)

// main runs the command line; the cli package handles signals.
func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

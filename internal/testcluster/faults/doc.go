// Package faults holds the cluster tests that break things: leader and node
// kills under linearizable load (porcupine), self-healing after nodes die,
// zones lost, processes paused or killed with SIGKILL, replicas rejoining
// and destroyed mid-read, chat and queues under chaos, the cluster's
// security (certificates, join tokens, gossip keys) and the rolling upgrade
// (build tag upgrade). It has only tests; they build on package testcluster.
// Kept apart from the functional cluster tests of package testcluster so
// that `go test ./...` runs the two at once.
package faults

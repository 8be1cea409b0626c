// Package jepsen holds the workloads and checkers of the fault-injection
// tests: KV checked for linearizability with porcupine, room history (no
// acknowledged post lost or duplicated, gap-free, identical on every
// node), queues (every acknowledged send received and acked once) and
// sessions (a revoked token is refused after its revocation window). Each
// workload runs clients against a nemesis.Cluster while a fault is injected
// and healed, and reports a Result: one row of docs/RELIABILITY.md.
//
// The tests that run them need root and are built with the nemesis tag:
//
//	go test -tags nemesis -run 'TestNemesis' ./internal/jepsen/
//
// scripts/nemesis runs them and renders the table. The package is for
// tests only.
package jepsen

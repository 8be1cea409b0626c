//go:build chaos

package faults_test

// defaultChaosKills is how many leaders the linearizability test kills in a
// long run: go test -tags chaos -run Linearizability ./internal/testcluster/
const defaultChaosKills = 200

// longRun is true with -tags chaos: the long growth tests run too.
const longRun = true

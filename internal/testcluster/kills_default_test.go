//go:build !chaos

package testcluster_test

// defaultChaosKills is how many leaders the linearizability test kills in
// the normal (CI) run.
const defaultChaosKills = 20

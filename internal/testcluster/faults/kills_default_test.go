//go:build !chaos

package faults_test

// defaultChaosKills is how many leaders the linearizability test kills in
// the normal (CI) run.
const defaultChaosKills = 20

// longRun is false in the normal run: the long growth tests (six nodes,
// in process or as processes) run only with -tags chaos.
const longRun = false

//go:build !chaos

package faults_test

import "time"

// processDeadAfter is --dead-after in the real-process healing tests: short
// in CI; the chaos build runs them with the 10 s of the acceptance tests.
const processDeadAfter = 3 * time.Second

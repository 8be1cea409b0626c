//go:build chaos

package faults_test

import "time"

// processDeadAfter is --dead-after in the real-process healing tests.
const processDeadAfter = 10 * time.Second

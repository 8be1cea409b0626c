package faults_test

import "testing"

// skipUnlessLong skips a long soak test (minutes of growth or healing under
// load) in the normal run, which must stay within minutes on two cores; it
// runs with -tags chaos:
// go test -tags chaos -run 'GrowToSix|GrowThreeToSix|Kill9Twice' ./internal/testcluster/
func skipUnlessLong(t *testing.T) {
	t.Helper()
	if !longRun {
		t.Skip("long test: run with -tags chaos")
	}
}

package testcluster_test

import (
	"fmt"
	"testing"
)

// BenchmarkCluster_QueueFeatures is BenchmarkCluster_Queue with 16
// consumers, with the dead-letter queue, delivery limit and priorities off
// and on (bench.QueueOptions.DeadLettersPriorities): the ratio of the two
// msgs/s is what those features cost end to end.
func BenchmarkCluster_QueueFeatures(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("dlq+priorities=%v", on), func(b *testing.B) { benchClusterQueue(b, 16, on) })
	}
}

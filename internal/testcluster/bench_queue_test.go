package testcluster_test

import (
	"fmt"
	"testing"

	"github.com/parley-chat/parley/internal/bench"
)

// BenchmarkCluster_QueueFeatures is BenchmarkCluster_Queue with 16
// consumers, with the dead-letter queue, delivery limit and priorities off
// and on (bench.QueueOptions.DeadLettersPriorities): the ratio of the two
// msgs/s is what those features cost end to end.
func BenchmarkCluster_QueueFeatures(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("dlq+priorities=%v", on), func(b *testing.B) { benchClusterQueue(b, 16, bench.QueueOptions{DeadLettersPriorities: on}) })
	}
}

// BenchmarkCluster_QueueAckOnReceive is BenchmarkCluster_Queue with each
// message acknowledged by its own call and by the consumer's next receive
// (bench.QueueOptions.AckOnReceive): one call and one Raft entry fewer per
// message. Compare msgs/s and cpu-µs/msg of the two in the same run.
func BenchmarkCluster_QueueAckOnReceive(b *testing.B) {
	for _, clients := range []int{1, 64} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("clients=%d/ack-on-receive=%v", clients, on), func(b *testing.B) {
				benchClusterQueue(b, clients, bench.QueueOptions{AckOnReceive: on})
			})
		}
	}
}

package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/queue"
)

// BenchmarkService_DeadLettersPriorities measures a message's round trip
// (send, leased receive, ack) through the Service over the in-memory
// replicator, with the issue-12 features off (a plain queue) and on (a
// dead-letter queue on another partition, a delivery limit, priorities 0
// to 9, and one message in ten nacked dead and moved by Maintain). The
// ratio of the two is the features' cost in the state machine.
func BenchmarkService_DeadLettersPriorities(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			r := newReplicator(4)
			s := queue.NewService(r, queue.Config{Now: r.Now})
			mustCreateB(b, s, "dlq")
			u := queue.SettingsUpdate{Set: queue.SetMaxDeliveries, Settings: queue.Settings{MaxDeliveries: 0}}
			if on {
				u = queue.SettingsUpdate{Set: queue.SetMaxDeliveries | queue.SetDeadLetter, Settings: queue.Settings{MaxDeliveries: 5, DeadLetter: "dlq"}}
			}
			if _, err := s.CreateWith(ctx, "alice", "jobs", u, ""); err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 200)
			lease := queue.ReceiveOptions{AckTimeout: time.Minute}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			i := 0
			for b.Loop() {
				m := queue.OutMessage{Body: body}
				if on {
					m.Priority = i % 10
				}
				if _, _, err := s.SendMessages(ctx, "alice", "jobs", []queue.OutMessage{m}, ""); err != nil {
					b.Fatal(err)
				}
				msg, found, err := s.Receive(ctx, "bob", "jobs", lease, "")
				if err != nil || !found {
					b.Fatalf("receive: %v %v", found, err)
				}
				if on && i%10 == 9 {
					err = s.Nack(ctx, "bob", "jobs", msg.Receipt, queue.NackOptions{Dead: true, Reason: "bench"}, "")
					if err == nil {
						_, err = s.Maintain(ctx, r.PartitionOf("jobs"))
					}
				} else {
					err = s.Ack(ctx, "bob", "jobs", msg.Receipt, "")
				}
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func mustCreateB(b *testing.B, s *queue.Service, name string) {
	b.Helper()
	if _, err := s.Create(context.Background(), "alice", name, ""); err != nil {
		b.Fatal(err)
	}
}

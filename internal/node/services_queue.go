package node

import (
	"context"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/queue"
)

// queueService is the queue Service the API uses. Long polls on a queue
// whose partition has a replica on this node wait on the notifier; all
// other calls, and long polls on other queues, go to the polling Service.
type queueService struct {
	*queue.Service
	notified   *queue.Service // nil: every long poll polls
	hasReplica func(queue string) bool
}

var _ api.QueueService = queueService{}

// Receive implements api.QueueService.
func (s queueService) Receive(ctx context.Context, user, q string, o queue.ReceiveOptions, idempotencyKey string) (queue.Message, bool, error) {
	if s.notified != nil && o.Wait > 0 && s.hasReplica(q) {
		return s.notified.Receive(ctx, user, q, o, idempotencyKey)
	}
	return s.Service.Receive(ctx, user, q, o, idempotencyKey)
}

// ReceiveMany implements api.QueueService, as Receive.
func (s queueService) ReceiveMany(ctx context.Context, user, q string, o queue.ReceiveOptions, idempotencyKey string) ([]queue.Message, error) {
	if s.notified != nil && o.Wait > 0 && s.hasReplica(q) {
		return s.notified.ReceiveMany(ctx, user, q, o, idempotencyKey)
	}
	return s.Service.ReceiveMany(ctx, user, q, o, idempotencyKey)
}

// newQueueService builds the queue services over the router; notes nil
// means long polls always poll.
func (n *Node) newQueueService(accounts *account.Service, notes queue.Notifier) queueService {
	cfg := queue.Config{IsAdmin: isAdmin(accounts), Now: n.clock.Now, ClusterProtocol: n.ClusterProtocol}
	s := queueService{
		Service: queue.NewService(n.router, cfg),
		hasReplica: func(q string) bool {
			return n.engine.HasGroup(n.router.PartitionOf(q))
		},
	}
	if notes != nil {
		cfg.Notifier = notes
		s.notified = queue.NewService(n.router, cfg)
	}
	return s
}

// isAdmin tells the queue Service whether user is an admin: from the
// signed-in identity of the request when it is user's (the usual case),
// else by reading the user.
func isAdmin(accounts *account.Service) func(ctx context.Context, user string) (bool, error) {
	return func(ctx context.Context, user string) (bool, error) {
		if id, ok := api.IdentityFrom(ctx); ok && strings.EqualFold(id.User, user) {
			return id.Admin, nil
		}
		u, err := accounts.Lookup(ctx, user)
		if errs.Is(err, errs.NotFound) || errs.Is(err, errs.Invalid) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return u.Admin, nil
	}
}

// startQueues starts the queues' background work and registers their
// metrics.
func (n *Node) startQueues(queues *queue.Service) {
	n.metrics.RegisterQueues(func() []metrics.QueueStats { return n.queueStats(queues) })
	n.goBackground(func() { n.queueLoop(queues, queueWorkInterval) })
}

// queueStats returns the stats of the queues of the partitions this node
// leads, for /metrics; a partition that cannot be read is left out.
func (n *Node) queueStats(queues *queue.Service) []metrics.QueueStats {
	var out []metrics.QueueStats
	now := time.Now().UnixMilli()
	for _, p := range n.ledPartitions() {
		ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
		infos, err := queues.PartitionQueues(ctx, p)
		cancel()
		if err != nil {
			continue
		}
		for _, q := range infos {
			st := q.Stats
			m := metrics.QueueStats{
				Queue: q.Name, Ready: st.Ready, Leased: st.Leased, Delayed: st.Delayed, Waiting: st.Waiting,
				DeadLetters: st.DeadLetters, DeadLettered: st.DeadLettered, Dropped: st.Dropped, Expired: st.Expired, Moving: st.Moving,
			}
			if st.OldestMs > 0 {
				m.OldestAgeSeconds = float64(max(now-st.OldestMs, 0)) / 1000
			}
			out = append(out, m)
		}
	}
	return out
}

// queueWorkInterval is how often the leaders of partitions run the queues'
// background work (queue.Service.Maintain): moving dead letters and
// redriven messages, and the timed work of queues nobody sends to or
// receives from. Receives do not wait for it: they return lapsed leases
// and deliver due delayed messages themselves.
const queueWorkInterval = 250 * time.Millisecond

// queueLoop runs queue.Service.Maintain every interval on the partitions
// this node leads.
func (n *Node) queueLoop(queues *queue.Service, every time.Duration) {
	n.leaderLoop(every, "queue background work", func(ctx context.Context, p uint64) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := queues.Maintain(ctx, p)
		return err
	})
}

package node

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
)

// notifyBuckets is how many hash buckets of queue names a partition keeps
// the latest notified index of. Queues sharing a bucket wake each other's
// waiters; the queue Service then finds nothing for them with a cheap read
// and waits again.
const notifyBuckets = 64

// notifyRecheck is how often a waiter checks that this node still holds a
// replica of its queue's partition; when it no longer does, nothing will
// wake it, so it returns and lets the Service propose again.
const notifyRecheck = time.Second

// queueNotifier implements queue.Notifier from the commands this node's
// replicas apply: notifyingMux records the index of every command that may
// wake a receiver (queue.TouchedKey), and applied, called once the engine
// reports a batch durable and visible to reads, wakes the waiters of those
// queues. Indexes are kept per partition, where they are comparable, and per
// bucket of queue names, so memory stays bounded however many queues exist.
//
// It can only tell about partitions this node holds a replica of; long polls
// on other queues poll instead (see queueService). A replica brought up to
// date by a snapshot applies no commands, so its waiters are not woken for
// the messages the snapshot carried; they find them at their next lease
// timer or when their wait ends and the client asks again.
type queueNotifier struct {
	partitionOf func(queue string) uint64
	hasReplica  func(partition uint64) bool
	recheck     time.Duration // notifyRecheck; tests shorten it

	mu      sync.Mutex
	pending map[uint64][]queueNote // partition -> applied, not yet reported durable
	parts   map[uint64]*notifyPartition
}

var _ queue.Notifier = (*queueNotifier)(nil)

// queueNote is one applied command that may wake receivers.
type queueNote struct {
	bucket int
	index  uint64
}

// notifyPartition holds one partition's latest notified index per bucket
// and a channel closed at the next notification of each bucket.
type notifyPartition struct {
	last [notifyBuckets]uint64
	wake [notifyBuckets]chan struct{}
}

func newQueueNotifier(partitionOf func(string) uint64, hasReplica func(uint64) bool) *queueNotifier {
	return &queueNotifier{
		partitionOf: partitionOf,
		hasReplica:  hasReplica,
		recheck:     notifyRecheck,
		pending:     map[uint64][]queueNote{},
		parts:       map[uint64]*notifyPartition{},
	}
}

func notifyBucket(queue string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(queue))
	return int(h.Sum32() % notifyBuckets)
}

// record notes that partition p applied, at index, a command that may wake
// receivers of queue. It runs on the engine's driver goroutine, before the
// batch is durable.
func (q *queueNotifier) record(p uint64, queue string, index uint64) {
	b := notifyBucket(queue)
	q.mu.Lock()
	q.pending[p] = append(q.pending[p], queueNote{bucket: b, index: index})
	q.mu.Unlock()
}

// applied wakes the waiters of every command of partition p recorded at an
// index up to applied: the engine reports that those are durable and
// visible to reads. It runs on the driver goroutine and does not block.
func (q *queueNotifier) applied(p, applied uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	notes := q.pending[p]
	if len(notes) == 0 {
		return
	}
	np := q.partition(p)
	i := 0
	for ; i < len(notes) && notes[i].index <= applied; i++ {
		b := notes[i].bucket
		np.last[b] = max(np.last[b], notes[i].index)
		if ch := np.wake[b]; ch != nil {
			close(ch)
			np.wake[b] = nil
		}
	}
	if i == len(notes) {
		delete(q.pending, p)
	} else {
		q.pending[p] = notes[i:]
	}
}

// partition returns p's state, creating it. q.mu must be held.
func (q *queueNotifier) partition(p uint64) *notifyPartition {
	np := q.parts[p]
	if np == nil {
		np = &notifyPartition{}
		q.parts[p] = np
	}
	return np
}

// Wait implements queue.Notifier. It returns nil once a command that may
// wake receivers of queue (or of a queue in the same bucket) was applied
// here after afterIndex, or within notifyRecheck when this node holds no
// replica of the queue's partition (any more) and so cannot tell; never at
// once for the same index.
func (q *queueNotifier) Wait(ctx context.Context, queue string, afterIndex uint64) error {
	p, b := q.partitionOf(queue), notifyBucket(queue)
	t := time.NewTimer(q.recheck)
	defer t.Stop()
	for {
		q.mu.Lock()
		np := q.partition(p)
		if np.last[b] > afterIndex {
			q.mu.Unlock()
			return nil
		}
		ch := np.wake[b]
		if ch == nil {
			ch = make(chan struct{})
			np.wake[b] = ch
		}
		q.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			if !q.hasReplica(p) {
				return nil
			}
			t.Reset(q.recheck)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

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

// newQueueService builds the queue services over the router; notes nil
// means long polls always poll.
func (n *Node) newQueueService(accounts *account.Service, notes *queueNotifier) queueService {
	cfg := queue.Config{IsAdmin: isAdmin(accounts)}
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

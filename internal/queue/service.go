package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
	"github.com/parley-chat/parley/internal/wire"
)

// Notifier wakes long-polling receivers. The node layer implements it from
// its applied-command notifications: after the batch holding a command for
// which TouchedKey reports a queue is visible to reads, it wakes that
// queue's waiters with the command's Raft index.
type Notifier interface {
	// Wait blocks until a command on queue for which TouchedKey reports
	// true has been applied at a Raft index greater than afterIndex, and
	// returns nil, at once if that has already happened; or until ctx is
	// done, and returns ctx.Err().
	//
	// It may return nil early when it cannot tell (an implementation may keep
	// only the latest such index per hash bucket of queue names, say): the
	// Service then reads the queue and, if nothing changed, proposes again,
	// which yields a current index. It must not keep returning at once for
	// an index at or after the last such command on queue.
	Wait(ctx context.Context, queue string, afterIndex uint64) error
}

// Default limits and intervals.
const (
	DefaultMaxBody       = 64 << 10 // bytes
	DefaultMaxName       = 64       // bytes of queue name
	DefaultMaxAckTimeout = 12 * time.Hour
	DefaultMaxWait       = 30 * time.Second
	DefaultPollMin       = 50 * time.Millisecond
	DefaultPollMax       = 500 * time.Millisecond
	DefaultMaxDelay      = 7 * 24 * time.Hour
)

// Limits bounds what callers may send and ask for. Zero fields take the
// defaults.
type Limits struct {
	MaxBody       int           // longest message body, in bytes (64 KiB)
	MaxName       int           // longest queue name, in bytes (64; at most MaxNameLen)
	MaxAckTimeout time.Duration // longest lease a receive may ask for (12 h)
	MaxWait       time.Duration // longest long poll (30 s)
	// MaxDelay is the longest delay a send, nack or TTL may ask for, and
	// how far ahead deliver_at may be (7 days).
	MaxDelay time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.MaxName <= 0 || l.MaxName > MaxNameLen {
		l.MaxName = DefaultMaxName
	}
	if l.MaxAckTimeout <= 0 || l.MaxAckTimeout > MaxAckTimeoutMs*time.Millisecond {
		l.MaxAckTimeout = DefaultMaxAckTimeout
	}
	if l.MaxWait <= 0 {
		l.MaxWait = DefaultMaxWait
	}
	if l.MaxDelay <= 0 || l.MaxDelay > MaxAckTimeoutMs*time.Millisecond {
		l.MaxDelay = DefaultMaxDelay
	}
	return l
}

// Config configures a Service. Zero fields take the defaults.
type Config struct {
	// Limits bounds requests.
	Limits Limits
	// IsAdmin reports whether user is an administrator, who may delete any
	// queue. nil means nobody is.
	IsAdmin func(ctx context.Context, user string) (bool, error)
	// Notifier wakes long polls when messages arrive. nil means polling.
	Notifier Notifier
	// PollMin and PollMax bound the polling interval of a long poll without
	// a Notifier: it starts at PollMin and doubles up to PollMax (50 ms and
	// 500 ms). PollMin is also the shortest wait for a lapsing lease.
	PollMin, PollMax time.Duration
	// ClusterProtocol returns the internal protocol every node speaks
	// (compat.ClusterProtocol); a receive that acknowledges is refused with
	// errs.UpgradeInProgress while it is below AckOnReceiveProtocol. Nil:
	// every node speaks this build's.
	ClusterProtocol func() int
	// Now returns the wall time that reads (Peek, ListQueues, long-poll
	// probes) use to tell lapsed leases, which the leader's stamps decide in
	// Apply. nil means time.Now. Long-poll deadlines always use real time.
	Now func() time.Time
}

// Service turns queue API calls into proposals and reads. It is safe for
// concurrent use.
type Service struct {
	r   state.Replicator
	cfg Config
	lim Limits
}

// NewService returns a Service that replicates through r.
func NewService(r state.Replicator, cfg Config) *Service {
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.PollMin <= 0 {
		cfg.PollMin = DefaultPollMin
	}
	if cfg.PollMax < cfg.PollMin {
		cfg.PollMax = max(DefaultPollMax, cfg.PollMin)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{r: r, cfg: cfg, lim: cfg.Limits}
}

// Limits returns the limits in force, defaults filled in.
func (s *Service) Limits() Limits { return s.lim }

// Create makes an empty queue owned by user and returns it. An existing
// queue is errs.Conflict. A non-empty idempotencyKey makes a retry by the
// same user within the dedup window return the first result (as for every
// write below).
func (s *Service) Create(ctx context.Context, user, queue, idempotencyKey string) (QueueInfo, error) {
	return s.CreateWith(ctx, user, queue, SettingsUpdate{}, idempotencyKey)
}

// Delete removes queue with all its messages and returns how many there
// were. Only its creator or an administrator (Config.IsAdmin) may:
// errs.Forbidden otherwise; a missing queue is errs.NotFound.
func (s *Service) Delete(ctx context.Context, user, queue, idempotencyKey string) (uint64, error) {
	if err := s.checkQueue(queue); err != nil {
		return 0, err
	}
	admin, err := s.admin(ctx, user)
	if err != nil {
		return 0, fmt.Errorf("queue: delete %q: %w", queue, err)
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeDelete(Delete{Queue: queue, User: user, Admin: admin}))
	if err != nil {
		return 0, err
	}
	return decodeDeleteResult(res)
}

// Send appends body to queue from user, for to (a user name, "" for anyone),
// and returns the message's id and time. An empty body is errs.Invalid, one
// over Limits.MaxBody errs.TooLarge; a missing queue is errs.NotFound.
func (s *Service) Send(ctx context.Context, user, queue, to string, body []byte, idempotencyKey string) (id uint64, timeMs int64, err error) {
	if err := s.checkQueue(queue); err != nil {
		return 0, 0, err
	}
	switch {
	case len(body) == 0:
		return 0, 0, errs.New(errs.Invalid, "body is empty")
	case len(body) > s.lim.MaxBody:
		return 0, 0, errs.New(errs.TooLarge, "body is %d bytes; the limit is %d", len(body), s.lim.MaxBody)
	}
	if err := checkUser("to", to); err != nil {
		return 0, 0, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeSend(Send{Queue: queue, User: user, To: to, Body: body}))
	if err != nil {
		return 0, 0, err
	}
	return decodeSendResult(res)
}

// Peek returns the oldest message user may receive from queue (only from
// one sender when from is not ""), without taking it; found is false when
// there is none. Reads are linearizable unless stale, when staleMs says how
// stale the answer may be. A missing queue is errs.NotFound.
func (s *Service) Peek(ctx context.Context, user, queue, from string, stale bool) (msg Message, found bool, staleMs int64, err error) {
	if err := s.checkQueue(queue); err != nil {
		return Message{}, false, 0, err
	}
	if err := checkUser("from", from); err != nil {
		return Message{}, false, 0, err
	}
	now := s.cfg.Now().UnixMilli()
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(queue), stale, func(r state.Reader) error {
		var err error
		msg, found, err = Peek(r, queue, user, from, now) // Get returns copies
		return err
	})
	if err != nil {
		return Message{}, false, 0, fmt.Errorf("queue: peek %q: %w", queue, err)
	}
	return msg, found, staleMs, nil
}

// ReceiveOptions are the optional parts of a receive.
type ReceiveOptions struct {
	// From, when not "", takes only messages from this sender.
	From string
	// AckTimeout, when > 0, leases the message for this long (rounded up to
	// a millisecond) instead of removing it: Ack it with Message.Receipt
	// before the lease lapses, or it is delivered again.
	AckTimeout time.Duration
	// Wait, when > 0, long-polls: when no message is there, wait up to this
	// long for one.
	Wait time.Duration
	// Max is the most messages ReceiveMany takes (1 to MaxBatch; 0 is 1).
	Max int
	// Ack lists receipts of leases the receiver holds (up to MaxBatch),
	// acknowledged in the same step before it takes anything, all or none:
	// one less call and one less Raft entry per message for a consumer
	// that acks each message as it asks for the next.
	Ack []string
	// StopWaiting, when it closes, ends a long poll's wait (the receive
	// then answers no message) but not a receive under way: a caller that
	// goes away cancels nothing that may have taken messages, and learns
	// what was taken (the stream's consumers, which return what they hold
	// when they end).
	StopWaiting <-chan struct{}
}

// Receive takes the first message user may receive from queue (highest
// priority, then oldest): one addressed to user or to anyone, only from
// o.From when set. found is false when there is none (after o.Wait). A
// missing queue is errs.NotFound.
func (s *Service) Receive(ctx context.Context, user, queue string, o ReceiveOptions, idempotencyKey string) (msg Message, found bool, err error) {
	o.Max = 1
	msgs, err := s.ReceiveMany(ctx, user, queue, o, idempotencyKey)
	if err != nil || len(msgs) == 0 {
		return Message{}, false, err
	}
	return msgs[0], true, nil
}

// ReceiveMany is Receive taking up to o.Max messages (1 to MaxBatch; 0
// means 1) in one step, in the order Receive would take them one by one.
// It returns none when there is none (after o.Wait).
func (s *Service) ReceiveMany(ctx context.Context, user, queue string, o ReceiveOptions, idempotencyKey string) ([]Message, error) {
	if err := s.checkQueue(queue); err != nil {
		return nil, err
	}
	if err := checkUser("from", o.From); err != nil {
		return nil, err
	}
	if o.AckTimeout < 0 || o.AckTimeout > s.lim.MaxAckTimeout {
		return nil, errs.New(errs.Invalid, "ack timeout must be between 0 and %d ms", s.lim.MaxAckTimeout.Milliseconds())
	}
	if o.Wait < 0 || o.Wait > s.lim.MaxWait {
		return nil, errs.New(errs.Invalid, "wait must be between 0 and %d ms", s.lim.MaxWait.Milliseconds())
	}
	if o.Max < 0 || o.Max > MaxBatch {
		return nil, errs.New(errs.Invalid, "max must be between 1 and %d", MaxBatch)
	}
	if err := wire.CheckIdempotencyKey(idempotencyKey); err != nil {
		return nil, err
	}
	held, err := s.heldOf(o.Ack)
	if err != nil {
		return nil, err
	}
	rc := Receive{
		Queue:        queue,
		User:         user,
		From:         o.From,
		AckTimeoutMs: (o.AckTimeout + time.Millisecond - 1).Milliseconds(),
		Max:          o.Max,
		Acks:         held,
	}
	return s.receive(ctx, user, queue, o, rc, idempotencyKey)
}

// heldOf checks the receipts a receive acknowledges and returns their
// leases, sorted as EncodeReceive needs them.
func (s *Service) heldOf(receipts []string) ([]Held, error) {
	if len(receipts) == 0 {
		return nil, nil
	}
	if len(receipts) > MaxBatch {
		return nil, errs.New(errs.Invalid, "ack lists %d receipts; at most %d", len(receipts), MaxBatch)
	}
	if err := compat.Require(s.cfg.ClusterProtocol, AckOnReceiveProtocol, "acknowledging on receive"); err != nil {
		return nil, err
	}
	held := make([]Held, len(receipts))
	for i, r := range receipts {
		if r == "" {
			return nil, errs.New(errs.Invalid, "ack[%d] is empty", i)
		}
		id, lease, ok := ParseReceipt(r)
		if !ok {
			return nil, errs.New(errs.Conflict, "ack[%d]: unknown receipt", i)
		}
		held[i] = Held{ID: id, Lease: lease}
	}
	if !SortHeld(held) {
		return nil, errs.New(errs.Invalid, "ack names one message twice")
	}
	return held, nil
}

// Ack acknowledges a message leased by a receive of user, removing it.
// errs.Conflict when the receipt is unknown or not user's, or the lease has
// lapsed; errs.Invalid when receipt is empty.
func (s *Service) Ack(ctx context.Context, user, queue, receipt, idempotencyKey string) error {
	if err := s.checkQueue(queue); err != nil {
		return err
	}
	if receipt == "" {
		return errs.New(errs.Invalid, "receipt is empty")
	}
	id, lease, ok := ParseReceipt(receipt)
	if !ok {
		return errs.New(errs.Conflict, "unknown receipt")
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeAck(Ack{Queue: queue, User: user, ID: id, Lease: lease}))
	if err != nil {
		return err
	}
	return decodeAckResult(res)
}

// ListQueues returns every queue, or with waitingOnly only those holding a
// message user may receive now, merged from every partition in name order.
// Every partition is read concurrently; staleMs is the largest staleness
// among them.
func (s *Service) ListQueues(ctx context.Context, user string, waitingOnly, stale bool) (queues []QueueInfo, staleMs int64, err error) {
	parts := s.r.Partitions()
	results := make([]partResult, len(parts))
	now := s.cfg.Now().UnixMilli()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			res := &results[i]
			res.staleMs, res.err = s.r.Read(ctx, p, stale, func(r state.Reader) error {
				var err error
				if waitingOnly {
					res.queues, err = Waiting(r, user, now)
				} else {
					res.queues, err = List(r)
				}
				return err
			})
			if res.err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return mergeResults(results)
}

// partResult is one partition's answer to ListQueues.
type partResult struct {
	queues  []QueueInfo
	staleMs int64
	err     error
}

// mergeResults merges the partitions' answers in name order. It reports the
// first failure not caused by its own cancellation.
func mergeResults(results []partResult) ([]QueueInfo, int64, error) {
	var firstErr error
	var staleMs int64
	n := 0
	for _, r := range results {
		if r.err != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
			firstErr = r.err
		}
		staleMs = max(staleMs, r.staleMs)
		n += len(r.queues)
	}
	if firstErr != nil {
		return nil, 0, fmt.Errorf("queue: list: %w", firstErr)
	}
	queues := make([]QueueInfo, 0, n)
	for _, r := range results {
		queues = append(queues, r.queues...)
	}
	slices.SortFunc(queues, func(a, b QueueInfo) int { return strings.Compare(a.Name, b.Name) })
	return queues, staleMs, nil
}

// propose replicates one command on queue's partition under user's
// idempotency key.
func (s *Service) propose(ctx context.Context, user, queue, idempotencyKey string, cmd []byte) ([]byte, error) {
	if err := wire.CheckIdempotencyKey(idempotencyKey); err != nil {
		return nil, err
	}
	res, err := s.r.Propose(ctx, s.r.PartitionOf(queue), DedupKey(user, queue, idempotencyKey, 0), cmd)
	if err != nil {
		return nil, fmt.Errorf("queue: %q: %w", queue, err)
	}
	return res, nil
}

// checkQueue validates a queue name against the limits.
func (s *Service) checkQueue(name string) error {
	if !ident.ValidName(name, s.lim.MaxName) {
		if err := text.Check(name, text.Line); err != nil {
			return errs.New(errs.Invalid, "queue name: %v", err)
		}
		return errs.New(errs.Invalid, "queue name must be 1 to %d characters of A-Z, a-z, 0-9, '_', '.' and '-'", s.lim.MaxName)
	}
	return nil
}

// checkUser validates an optional user name given as a request field.
func checkUser(field, name string) error {
	if name != "" && !ident.ValidName(name, MaxNameLen) {
		if err := text.Check(name, text.Line); err != nil {
			return errs.New(errs.Invalid, "%s: %v", field, err)
		}
		return errs.New(errs.Invalid, "%s must be a user name: characters of A-Z, a-z, 0-9, '_', '.' and '-'", field)
	}
	return nil
}

// DedupKey returns the replication dedup key for a user's idempotency key on
// queue: Tag, then user, queue and idempotencyKey each as a uvarint length
// and bytes, then, for attempt > 0 (the later attempts of one long poll),
// uvarint attempt; "" when idempotencyKey is empty. The tag keeps queue
// retries apart from other domains' in the same partition, the lengths keep
// the parts apart, and the queue keeps one key reused on two queues from
// returning one queue's result for the other.
func DedupKey(user, queue, idempotencyKey string, attempt uint64) string {
	k := wire.NewDedupKey(idempotencyKey, Tag).String(user).String(queue).String(idempotencyKey)
	if attempt > 0 {
		k.Uvarint(attempt)
	}
	return k.Done()
}

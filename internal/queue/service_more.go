package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
)

// OutMessage is a message to send with its options.
type OutMessage struct {
	// To sends the message to one user; "" to anyone.
	To   string
	Body []byte
	// Priority is 0 (the default, lowest) to MaxPriority.
	Priority int
	// Delay delays delivery by this long after the send; DeliverAtMs (Unix
	// ms) until then. At most one of them.
	Delay       time.Duration
	DeliverAtMs int64
	// TTL, when > 0, expires the message this long after its send.
	TTL time.Duration
	// Group puts the message in a FIFO group.
	Group string
}

// SendMessages appends msgs (1 to MaxBatch) to queue from user, all or
// none, and returns their ids and the time of the send. A queue with
// max_length and overflow reject without room for all of them is
// errs.Conflict. Bad input is errs.Invalid (errs.TooLarge for a body), the
// message named by its index.
func (s *Service) SendMessages(ctx context.Context, user, queue string, msgs []OutMessage, idempotencyKey string) ([]uint64, int64, error) {
	if err := s.checkQueue(queue); err != nil {
		return nil, 0, err
	}
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return nil, 0, errs.New(errs.Invalid, "messages: send 1 to %d messages, not %d", MaxBatch, len(msgs))
	}
	sends := make([]Send, len(msgs))
	for i, m := range msgs {
		var err error
		if sends[i], err = s.checkMessage(m); err != nil {
			if len(msgs) > 1 {
				return nil, 0, prefixed(fmt.Sprintf("messages[%d]", i), err)
			}
			return nil, 0, err
		}
	}
	if len(sends) == 1 {
		c := sends[0]
		c.Queue, c.User = queue, user
		res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeSend(c))
		if err != nil {
			return nil, 0, err
		}
		id, ts, err := decodeSendResult(res)
		return []uint64{id}, ts, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeSendBatch(SendBatch{Queue: queue, User: user, Messages: sends}))
	if err != nil {
		return nil, 0, err
	}
	return decodeBatchResult(res)
}

// checkMessage validates a message to send and returns its command form.
func (s *Service) checkMessage(m OutMessage) (Send, error) {
	switch {
	case len(m.Body) == 0:
		return Send{}, errs.New(errs.Invalid, "body is empty")
	case len(m.Body) > s.lim.MaxBody:
		return Send{}, errs.New(errs.TooLarge, "body is %d bytes; the limit is %d", len(m.Body), s.lim.MaxBody)
	case m.Priority < 0 || m.Priority > MaxPriority:
		return Send{}, errs.New(errs.Invalid, "priority must be between 0 and %d", MaxPriority)
	case m.Delay > 0 && m.DeliverAtMs > 0:
		return Send{}, errs.New(errs.Invalid, "give delay_ms or deliver_at, not both")
	}
	if err := checkUser("to", m.To); err != nil {
		return Send{}, err
	}
	delay, err := s.checkDuration("delay_ms", m.Delay)
	if err != nil {
		return Send{}, err
	}
	ttl, err := s.checkDuration("ttl_ms", m.TTL)
	if err != nil {
		return Send{}, err
	}
	if m.DeliverAtMs < 0 || m.DeliverAtMs > s.cfg.Now().Add(s.lim.MaxDelay).UnixMilli() {
		return Send{}, errs.New(errs.Invalid, "deliver_at must be a Unix ms time at most %d ms ahead", s.lim.MaxDelay.Milliseconds())
	}
	if err := checkGroup(m.Group); err != nil {
		return Send{}, err
	}
	return Send{To: m.To, Body: m.Body, SendOptions: SendOptions{
		Priority: byte(m.Priority), DelayMs: delay, DeliverAtMs: m.DeliverAtMs, TTLMs: ttl, Group: m.Group,
	}}, nil
}

// prefixed returns err with its user message prefixed by a field name.
func prefixed(field string, err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return errs.New(e.Code, "%s: %s", field, e.Message)
	}
	return err
}

// checkDuration validates an optional duration field of at most MaxDelay
// and returns it in ms, rounded up.
func (s *Service) checkDuration(field string, d time.Duration) (int64, error) {
	if d < 0 || d > s.lim.MaxDelay {
		return 0, errs.New(errs.Invalid, "%s must be between 0 and %d", field, s.lim.MaxDelay.Milliseconds())
	}
	return (d + time.Millisecond - 1).Milliseconds(), nil
}

func checkGroup(g string) error {
	if g != "" && !ident.ValidName(g, MaxGroupLen) {
		if err := text.Check(g, text.Line); err != nil {
			return errs.New(errs.Invalid, "group: %v", err)
		}
		return errs.New(errs.Invalid, "group must be 1 to %d characters of A-Z, a-z, 0-9, '_', '.' and '-'", MaxGroupLen)
	}
	return nil
}

// NackOptions qualify Nack.
type NackOptions struct {
	// Delay returns the message after this long instead of at once.
	Delay time.Duration
	// Reason is kept with the message and shown if it is dead-lettered.
	Reason string
	// Dead sends the message to the dead-letter queue now (or drops it when
	// the queue has none).
	Dead bool
}

// Nack gives back a message leased by a receive of user: to the queue, at
// its position, now or after o.Delay, or dead-lettered with o.Dead. A
// message already leased max_deliveries times is dead-lettered. Receipts
// are refused as for Ack.
func (s *Service) Nack(ctx context.Context, user, queue, receipt string, o NackOptions, idempotencyKey string) error {
	id, lease, err := s.checkReceipt(queue, receipt)
	if err != nil {
		return err
	}
	delay, err := s.checkDuration("delay_ms", o.Delay)
	if err != nil {
		return err
	}
	if len(o.Reason) > MaxReasonLen {
		return errs.New(errs.Invalid, "reason is %d bytes; the limit is %d", len(o.Reason), MaxReasonLen)
	}
	if err := text.Check(o.Reason, text.Line); err != nil {
		return errs.New(errs.Invalid, "reason: %v", err)
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeNack(Nack{
		Queue: queue, User: user, ID: id, Lease: lease, DelayMs: delay, Dead: o.Dead, Reason: o.Reason,
	}))
	if err != nil {
		return err
	}
	return decodeOKResult(res, opNack)
}

// Extend makes the lease user holds on a message last ackTimeout from now
// (the leader's time) and returns its new expiry. A lapsed lease or an
// unknown receipt is errs.Conflict.
func (s *Service) Extend(ctx context.Context, user, queue, receipt string, ackTimeout time.Duration, idempotencyKey string) (int64, error) {
	id, lease, err := s.checkReceipt(queue, receipt)
	if err != nil {
		return 0, err
	}
	if ackTimeout <= 0 || ackTimeout > s.lim.MaxAckTimeout {
		return 0, errs.New(errs.Invalid, "ack_timeout_ms must be between 1 and %d", s.lim.MaxAckTimeout.Milliseconds())
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeExtend(Extend{
		Queue: queue, User: user, ID: id, Lease: lease, AckTimeoutMs: (ackTimeout + time.Millisecond - 1).Milliseconds(),
	}))
	if err != nil {
		return 0, err
	}
	return decodeExtendResult(res)
}

// checkReceipt validates the queue and a receipt, and returns its parts.
func (s *Service) checkReceipt(queue, receipt string) (id, lease uint64, err error) {
	if err := s.checkQueue(queue); err != nil {
		return 0, 0, err
	}
	if receipt == "" {
		return 0, 0, errs.New(errs.Invalid, "receipt is empty")
	}
	id, lease, ok := ParseReceipt(receipt)
	if !ok {
		return 0, 0, errs.New(errs.Conflict, "unknown receipt")
	}
	return id, lease, nil
}

// CreateWith is Create with settings other than the defaults.
func (s *Service) CreateWith(ctx context.Context, user, queue string, u SettingsUpdate, idempotencyKey string) (QueueInfo, error) {
	if err := s.checkQueue(queue); err != nil {
		return QueueInfo{}, err
	}
	if err := s.checkSettings(ctx, queue, u); err != nil {
		return QueueInfo{}, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeCreate(Create{Queue: queue, User: user, Settings: u.masked()}))
	if err != nil {
		return QueueInfo{}, err
	}
	created, err := decodeCreateResult(res)
	if err != nil {
		return QueueInfo{}, err
	}
	q := queueRecord{maxDeliveries: DefaultMaxDeliveries}
	q.apply(u)
	return QueueInfo{Name: queue, Creator: user, CreatedMs: created, Settings: q.settings()}, nil
}

// Configure changes the settings u names and returns them all. Only the
// queue's creator or an admin may (errs.Forbidden). A dead-letter queue
// must exist and not be the queue itself (errs.Invalid).
func (s *Service) Configure(ctx context.Context, user, queue string, u SettingsUpdate, idempotencyKey string) (Settings, error) {
	if err := s.checkQueue(queue); err != nil {
		return Settings{}, err
	}
	if u.Set == 0 {
		return Settings{}, errs.New(errs.Invalid, "no setting to change")
	}
	if err := s.checkSettings(ctx, queue, u); err != nil {
		return Settings{}, err
	}
	admin, err := s.admin(ctx, user)
	if err != nil {
		return Settings{}, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeConfigure(Configure{Queue: queue, User: user, Admin: admin, Settings: u.masked()}))
	if err != nil {
		return Settings{}, err
	}
	return decodeConfigResult(res)
}

// checkSettings validates the settings of u.
func (s *Service) checkSettings(ctx context.Context, queue string, u SettingsUpdate) error {
	if u.Set&^setAll != 0 {
		return errs.New(errs.Invalid, "unknown setting")
	}
	if u.Set&SetTTL != 0 {
		if u.TTLMs < 0 || u.TTLMs > s.lim.MaxDelay.Milliseconds() {
			return errs.New(errs.Invalid, "ttl_ms must be between 0 and %d", s.lim.MaxDelay.Milliseconds())
		}
	}
	if u.Set&SetDeadLetter == 0 || u.DeadLetter == "" {
		return nil
	}
	dl := u.DeadLetter
	if !ident.ValidName(dl, s.lim.MaxName) {
		return errs.New(errs.Invalid, "dead_letter must be a queue name")
	}
	if dl == queue {
		return errs.New(errs.Invalid, "dead_letter: a queue cannot be its own dead-letter queue")
	}
	var exists bool
	if _, err := s.r.Read(ctx, s.r.PartitionOf(dl), false, func(r state.Reader) error {
		_, ok, err := loadQueue(r, dl)
		exists = ok
		return err
	}); err != nil {
		return fmt.Errorf("queue: read %q: %w", dl, err)
	}
	if !exists {
		return errs.New(errs.Invalid, "dead_letter: queue %q does not exist", dl)
	}
	return nil
}

// admin reports whether user is an administrator (Config.IsAdmin).
func (s *Service) admin(ctx context.Context, user string) (bool, error) {
	if s.cfg.IsAdmin == nil {
		return false, nil
	}
	admin, err := s.cfg.IsAdmin(ctx, user)
	if err != nil {
		return false, fmt.Errorf("queue: is %q an admin: %w", user, err)
	}
	return admin, nil
}

// Purge removes every message of queue, leased ones included, and returns
// how many there were. Only its creator or an admin may.
func (s *Service) Purge(ctx context.Context, user, queue, idempotencyKey string) (uint64, error) {
	if err := s.checkQueue(queue); err != nil {
		return 0, err
	}
	admin, err := s.admin(ctx, user)
	if err != nil {
		return 0, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodePurge(Purge{Queue: queue, User: user, Admin: admin}))
	if err != nil {
		return 0, err
	}
	n, _, err := decodeCountResult(res, opPurge)
	return n, err
}

// RedriveOptions qualify Redrive.
type RedriveOptions struct {
	// Max is the most dead letters to move (1 to MaxRedrive; 0 is 100).
	Max int
	// To moves them to this queue instead of the ones they came from.
	To string
}

// Redrive moves ready dead letters of queue, oldest first, back to the
// queues they were dead-lettered from (or to o.To), as new messages with no
// deliveries. It returns how many it moved and whether dead letters
// remain. The move completes in the background, atomically per message:
// each arrives once. Only the queue's creator or an admin may.
func (s *Service) Redrive(ctx context.Context, user, queue string, o RedriveOptions, idempotencyKey string) (moved uint64, more bool, err error) {
	if err := s.checkQueue(queue); err != nil {
		return 0, false, err
	}
	if o.Max == 0 {
		o.Max = MaxBatch
	}
	if o.Max < 0 || o.Max > MaxRedrive {
		return 0, false, errs.New(errs.Invalid, "max must be between 1 and %d", MaxRedrive)
	}
	if o.To != "" {
		if err := s.checkQueue(o.To); err != nil {
			return 0, false, prefixed("to", err)
		}
	}
	admin, err := s.admin(ctx, user)
	if err != nil {
		return 0, false, err
	}
	res, err := s.propose(ctx, user, queue, idempotencyKey, EncodeRedrive(Redrive{Queue: queue, User: user, Admin: admin, Max: o.Max, To: o.To}))
	if err != nil {
		return 0, false, err
	}
	return decodeCountResult(res, opRedrive)
}

// Info returns one queue with its settings and stats. Reads are
// linearizable unless stale.
func (s *Service) Info(ctx context.Context, queue string, stale bool) (info QueueInfo, staleMs int64, err error) {
	if err := s.checkQueue(queue); err != nil {
		return QueueInfo{}, 0, err
	}
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(queue), stale, func(r state.Reader) error {
		info, err = Info(r, queue)
		return err
	})
	if err != nil {
		return QueueInfo{}, 0, fmt.Errorf("queue: info %q: %w", queue, err)
	}
	return info, staleMs, nil
}

// DefaultBrowse and MaxBrowse bound the messages one Browse returns.
const (
	DefaultBrowse = 50
	MaxBrowse     = 500
)

// Browse lists up to limit messages of queue with ids above after, without
// taking them: those user may receive, or all of them for its creator and
// admins. Dead letters show where they came from and why.
func (s *Service) Browse(ctx context.Context, user, queue string, after uint64, limit int, stale bool) (msgs []Message, staleMs int64, err error) {
	if err := s.checkQueue(queue); err != nil {
		return nil, 0, err
	}
	if limit == 0 {
		limit = DefaultBrowse
	}
	if limit < 0 || limit > MaxBrowse {
		return nil, 0, errs.New(errs.Invalid, "limit must be between 1 and %d", MaxBrowse)
	}
	admin, err := s.admin(ctx, user)
	if err != nil {
		return nil, 0, err
	}
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(queue), stale, func(r state.Reader) error {
		q, ok, err := loadQueue(r, queue)
		if err != nil {
			return err
		}
		if !ok {
			return errs.New(errs.NotFound, "queue %q does not exist", queue)
		}
		msgs, err = Browse(r, queue, user, admin || ident.EqualFold(q.creator, user), after, limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("queue: browse %q: %w", queue, err)
	}
	return msgs, staleMs, nil
}

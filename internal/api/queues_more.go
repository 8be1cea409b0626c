package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// queueServiceMore is the part of QueueService for dead letters, delays,
// batches, stats and the other calls of issue 12.
type queueServiceMore interface {
	CreateWith(ctx context.Context, user, queue string, u queue.SettingsUpdate, idempotencyKey string) (queue.QueueInfo, error)
	Configure(ctx context.Context, user, queue string, u queue.SettingsUpdate, idempotencyKey string) (queue.Settings, error)
	Info(ctx context.Context, queue string, stale bool) (queue.QueueInfo, int64, error)
	SendMessages(ctx context.Context, user, queue string, msgs []queue.OutMessage, idempotencyKey string) ([]uint64, int64, error)
	ReceiveMany(ctx context.Context, user, queue string, o queue.ReceiveOptions, idempotencyKey string) ([]queue.Message, error)
	Nack(ctx context.Context, user, queue, receipt string, o queue.NackOptions, idempotencyKey string) error
	Extend(ctx context.Context, user, queue, receipt string, ackTimeout time.Duration, idempotencyKey string) (int64, error)
	Purge(ctx context.Context, user, queue, idempotencyKey string) (uint64, error)
	Redrive(ctx context.Context, user, queue string, o queue.RedriveOptions, idempotencyKey string) (uint64, bool, error)
	Browse(ctx context.Context, user, queue string, after uint64, limit int, stale bool) ([]queue.Message, int64, error)
}

// settingsRequest is the settings part of a create or configure request;
// absent fields keep their value.
type settingsRequest struct {
	MaxDeliveries *uint64 `json:"max_deliveries,omitempty"`
	DeadLetter    *string `json:"dead_letter,omitempty"`
	TTLMs         *int64  `json:"ttl_ms,omitempty"`
	MaxLength     *uint64 `json:"max_length,omitempty"`
	Overflow      *string `json:"overflow,omitempty"`
}

// Overflow names in requests and answers.
const (
	overflowReject     = "reject"
	overflowDropOldest = "drop_oldest"
)

// update returns the settings change the request asks for.
func (b *settingsRequest) update() (queue.SettingsUpdate, error) {
	var u queue.SettingsUpdate
	if b.MaxDeliveries != nil {
		u.Set |= queue.SetMaxDeliveries
		u.MaxDeliveries = *b.MaxDeliveries
	}
	if b.DeadLetter != nil {
		u.Set |= queue.SetDeadLetter
		u.DeadLetter = *b.DeadLetter
	}
	if b.TTLMs != nil {
		u.Set |= queue.SetTTL
		u.TTLMs = *b.TTLMs
	}
	if b.MaxLength != nil {
		u.Set |= queue.SetMaxLength
		u.MaxLength = *b.MaxLength
	}
	if b.Overflow != nil {
		u.Set |= queue.SetOverflow
		switch *b.Overflow {
		case overflowReject:
		case overflowDropOldest:
			u.DropOldest = true
		default:
			return u, errs.New(errs.Invalid, "overflow must be %q or %q", overflowReject, overflowDropOldest)
		}
	}
	return u, nil
}

// settingsJSON is a queue's settings in answers.
type settingsJSON struct {
	MaxDeliveries uint64 `json:"max_deliveries"` // 0: unlimited
	DeadLetter    string `json:"dead_letter,omitempty"`
	TTLMs         int64  `json:"ttl_ms,omitempty"`
	MaxLength     uint64 `json:"max_length,omitempty"`
	Overflow      string `json:"overflow"`
}

func settingsOf(s queue.Settings) settingsJSON {
	o := overflowReject
	if s.DropOldest {
		o = overflowDropOldest
	}
	return settingsJSON{MaxDeliveries: s.MaxDeliveries, DeadLetter: s.DeadLetter, TTLMs: s.TTLMs, MaxLength: s.MaxLength, Overflow: o}
}

// statsJSON is a queue's stats in answers.
type statsJSON struct {
	Ready        uint64 `json:"ready"`
	Leased       uint64 `json:"leased"`
	Delayed      uint64 `json:"delayed"`
	Waiting      uint64 `json:"waiting"`
	DeadLetters  uint64 `json:"dead_letters"`
	DeadLettered uint64 `json:"dead_lettered"`
	Dropped      uint64 `json:"dropped"`
	Expired      uint64 `json:"expired"`
	Moving       uint64 `json:"moving"`
	OldestAt     int64  `json:"oldest_at,omitempty"` // Unix ms
}

func statsOf(s queue.Stats) statsJSON {
	return statsJSON{
		Ready: s.Ready, Leased: s.Leased, Delayed: s.Delayed, Waiting: s.Waiting, DeadLetters: s.DeadLetters,
		DeadLettered: s.DeadLettered, Dropped: s.Dropped, Expired: s.Expired, Moving: s.Moving, OldestAt: s.OldestMs,
	}
}

// outMessageJSON is a message to send with its options.
type outMessageJSON struct {
	Body      *string `json:"body"`
	To        string  `json:"to,omitempty"`
	Priority  int     `json:"priority,omitempty"`
	DelayMs   int64   `json:"delay_ms,omitempty"`
	DeliverAt int64   `json:"deliver_at,omitempty"` // Unix ms
	TTLMs     int64   `json:"ttl_ms,omitempty"`
	Group     string  `json:"group,omitempty"`
}

// outMessage checks the fields the domain cannot see (a missing body) and
// returns the message; where names the message in a batch.
func (m *outMessageJSON) outMessage(where string) (queue.OutMessage, error) {
	if m.Body == nil {
		return queue.OutMessage{}, errs.New(errs.Invalid, "%sbody is missing", where)
	}
	return queue.OutMessage{
		To: m.To, Body: []byte(*m.Body), Priority: m.Priority, Delay: time.Duration(m.DelayMs) * time.Millisecond,
		DeliverAtMs: m.DeliverAt, TTL: time.Duration(m.TTLMs) * time.Millisecond, Group: m.Group,
	}, nil
}

// batchRequest is the body of POST /api/v1/queues/{queue}/messages/batch.
type batchRequest struct {
	Messages []outMessageJSON `json:"messages"`
	writeMeta
}

// batchResponse is the answer to a batch send.
type batchResponse struct {
	IDs []uint64 `json:"ids"`
	Ts  int64    `json:"ts"`
}

// messagesResponse is a list of messages: a receive with max, a browse.
type messagesResponse struct {
	Messages []messageJSON `json:"messages"`
}

func messagesOf(msgs []queue.Message) messagesResponse {
	out := messagesResponse{Messages: make([]messageJSON, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = messageOf(m)
		out.Messages[i].State = m.State
	}
	return out
}

// nackRequest is the body of POST /api/v1/queues/{queue}/nack.
type nackRequest struct {
	Receipt string `json:"receipt"`
	DelayMs int64  `json:"delay_ms,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Dead    bool   `json:"dead,omitempty"`
	writeMeta
}

// extendRequest is the body of POST /api/v1/queues/{queue}/extend.
type extendRequest struct {
	Receipt      string `json:"receipt"`
	AckTimeoutMs int64  `json:"ack_timeout_ms"`
	writeMeta
}

// redriveRequest is the optional body of POST /api/v1/queues/{queue}/redrive.
type redriveRequest struct {
	Max int    `json:"max,omitempty"`
	To  string `json:"to,omitempty"`
	writeMeta
}

// configureRequest is the body of PATCH /api/v1/queues/{queue}.
type configureRequest struct {
	settingsRequest
	writeMeta
}

// queueInfo serves GET /api/v1/queues/{queue}: the queue with its settings
// and stats.
func (s *Server) queueInfo(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, staleMs, err := s.queues.Info(r.Context(), r.PathValue("queue"), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, queueOf(q))
}

// queueConfigure serves PATCH /api/v1/queues/{queue}: 200 with the
// settings; for the creator or an admin.
func (s *Server) queueConfigure(w http.ResponseWriter, r *http.Request) {
	var body configureRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := body.update()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	set, err := s.queues.Configure(r.Context(), identity(r).User, r.PathValue("queue"), u, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsOf(set))
}

// queueSendBatch serves POST /api/v1/queues/{queue}/messages/batch: 201
// {ids, ts}, all the messages or none.
func (s *Server) queueSendBatch(w http.ResponseWriter, r *http.Request) {
	var body batchRequest
	l := s.limits.send
	l.body = l.body*queue.MaxBatch + smallBody
	idem, err := s.decodeContent(w, r, l, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(body.Messages) == 0 || len(body.Messages) > queue.MaxBatch {
		s.writeError(w, r, errs.New(errs.Invalid, "messages: send 1 to %d messages, not %d", queue.MaxBatch, len(body.Messages)))
		return
	}
	msgs := make([]queue.OutMessage, len(body.Messages))
	for i := range body.Messages {
		if msgs[i], err = body.Messages[i].outMessage(fmt.Sprintf("messages[%d]: ", i)); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	for range msgs {
		if err := s.take(r, ratelimit.QueueSends); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	ids, ts, err := s.queues.SendMessages(r.Context(), identity(r).User, r.PathValue("queue"), msgs, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, batchResponse{IDs: ids, Ts: ts})
}

// queueBrowse serves GET /api/v1/queues/{queue}/messages?after=&limit=:
// the messages without taking them (all of them for the creator and
// admins, else those the caller may receive).
func (s *Server) queueBrowse(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, _, err := queryUint(r, "after")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, _, err := queryUint(r, "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if limit > queue.MaxBrowse {
		s.writeError(w, r, errs.New(errs.Invalid, "limit must be between 1 and %d", queue.MaxBrowse))
		return
	}
	msgs, staleMs, err := s.queues.Browse(r.Context(), identity(r).User, r.PathValue("queue"), after, int(limit), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, messagesOf(msgs))
}

// queueNack serves POST /api/v1/queues/{queue}/nack: 204; 409 as for ack.
func (s *Server) queueNack(w http.ResponseWriter, r *http.Request) {
	var body nackRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := queue.NackOptions{Delay: time.Duration(body.DelayMs) * time.Millisecond, Reason: body.Reason, Dead: body.Dead}
	if err := s.queues.Nack(r.Context(), identity(r).User, r.PathValue("queue"), body.Receipt, o, idem); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// extendResponse is the answer to an extend.
type extendResponse struct {
	LeaseExpiresAt int64 `json:"lease_expires_at"` // Unix ms
}

// queueExtend serves POST /api/v1/queues/{queue}/extend: 200
// {lease_expires_at}; 409 when the lease lapsed or the receipt is unknown.
func (s *Server) queueExtend(w http.ResponseWriter, r *http.Request) {
	var body extendRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if maxMs := s.queues.Limits().MaxAckTimeout.Milliseconds(); body.AckTimeoutMs < 1 || body.AckTimeoutMs > maxMs {
		s.writeError(w, r, errs.New(errs.Invalid, "ack_timeout_ms must be between 1 and %d", maxMs))
		return
	}
	until, err := s.queues.Extend(r.Context(), identity(r).User, r.PathValue("queue"), body.Receipt, time.Duration(body.AckTimeoutMs)*time.Millisecond, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, extendResponse{LeaseExpiresAt: until})
}

// purgeResponse is the answer to a purge.
type purgeResponse struct {
	Purged uint64 `json:"purged"`
}

// queuePurge serves POST /api/v1/queues/{queue}/purge: 200 {purged}; for
// the creator or an admin.
func (s *Server) queuePurge(w http.ResponseWriter, r *http.Request) {
	var body struct{ writeMeta }
	idem, err := s.decodeWrite(w, r, smallBody, &body, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.queues.Purge(r.Context(), identity(r).User, r.PathValue("queue"), idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, purgeResponse{Purged: n})
}

// redriveResponse is the answer to a redrive.
type redriveResponse struct {
	Moved uint64 `json:"moved"`
	More  bool   `json:"more"`
}

// queueRedrive serves POST /api/v1/queues/{queue}/redrive {max?, to?}: 200
// {moved, more}; for the creator or an admin of the dead-letter queue.
func (s *Server) queueRedrive(w http.ResponseWriter, r *http.Request) {
	var body redriveRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, more, err := s.queues.Redrive(r.Context(), identity(r).User, r.PathValue("queue"), queue.RedriveOptions{Max: body.Max, To: body.To}, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, redriveResponse{Moved: n, More: more})
}

// queueRoutes registers the routes of queues_more.go.
func (s *Server) queueRoutes() {
	s.handleAuth("GET /api/v1/queues/{queue}", s.queueInfo)
	s.handleAuth("PATCH /api/v1/queues/{queue}", s.queueConfigure)
	s.handleAuth("POST /api/v1/queues/{queue}/messages/batch", s.queueSendBatch)
	s.handleAuth("GET /api/v1/queues/{queue}/messages", s.queueBrowse)
	s.handleAuth("POST /api/v1/queues/{queue}/nack", s.queueNack)
	s.handleAuth("POST /api/v1/queues/{queue}/extend", s.queueExtend)
	s.handleAuth("POST /api/v1/queues/{queue}/purge", s.queuePurge)
	s.handleAuth("POST /api/v1/queues/{queue}/redrive", s.queueRedrive)
}

package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// QueueService is what the queue routes need from queue.
type QueueService interface {
	Create(ctx context.Context, user, queue, idempotencyKey string) (queue.QueueInfo, error)
	Delete(ctx context.Context, user, queue, idempotencyKey string) (uint64, error)
	Send(ctx context.Context, user, queue, to string, body []byte, idempotencyKey string) (id uint64, timeMs int64, err error)
	Peek(ctx context.Context, user, queue, from string, stale bool) (msg queue.Message, found bool, staleMs int64, err error)
	Receive(ctx context.Context, user, queue string, o queue.ReceiveOptions, idempotencyKey string) (msg queue.Message, found bool, err error)
	Ack(ctx context.Context, user, queue, receipt, idempotencyKey string) error
	ListQueues(ctx context.Context, user string, waitingOnly, stale bool) ([]queue.QueueInfo, int64, error)
	Limits() queue.Limits
	queueServiceMore
}

var _ QueueService = (*queue.Service)(nil)

// createQueueRequest is the body of POST /api/v1/queues.
type createQueueRequest struct {
	Name string `json:"name"`
	settingsRequest
	writeMeta
}

// sendRequest is the body of POST /api/v1/queues/{queue}/messages.
type sendRequest struct {
	outMessageJSON
	writeMeta
}

// receiveRequest is the optional body of POST /api/v1/queues/{queue}/receive.
type receiveRequest struct {
	From         string `json:"from,omitempty"`
	AckTimeoutMs int64  `json:"ack_timeout_ms,omitempty"`
	WaitMs       int64  `json:"wait_ms,omitempty"`
	// Max, when present, takes up to that many messages and answers a list.
	Max *int `json:"max,omitempty"`
	// Ack lists receipts acknowledged before anything is taken, all or
	// none.
	Ack []string `json:"ack,omitempty"`
	writeMeta
}

// ackRequest is the body of POST /api/v1/queues/{queue}/ack.
type ackRequest struct {
	Receipt string `json:"receipt"`
	writeMeta
}

// queueJSON is a queue in responses.
type queueJSON struct {
	Name      string `json:"name"`
	Creator   string `json:"creator"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	Messages  uint64 `json:"messages"`
	InFlight  uint64 `json:"in_flight"`
	LastID    uint64 `json:"last_id"`
	settingsJSON
	Stats statsJSON `json:"stats"`
}

func queueOf(q queue.QueueInfo) queueJSON {
	return queueJSON{
		Name: q.Name, Creator: q.Creator, CreatedAt: q.CreatedMs, Messages: q.Messages, InFlight: q.InFlight, LastID: q.LastID,
		settingsJSON: settingsOf(q.Settings), Stats: statsOf(q.Stats),
	}
}

// queuesResponse is the body of GET /api/v1/queues.
type queuesResponse struct {
	Queues []queueJSON `json:"queues"`
}

// sendResponse is the body of a send.
type sendResponse struct {
	ID uint64 `json:"id"`
	Ts int64  `json:"ts"`
}

// messageJSON is a queue message in peek and receive answers.
type messageJSON struct {
	ID     uint64 `json:"id"`
	Sender string `json:"sender"`
	// To is the receiver the message was sent to; "" for anyone.
	To         string `json:"to,omitempty"`
	Ts         int64  `json:"ts"`
	Body       string `json:"body"`
	Deliveries uint64 `json:"deliveries"`
	// Receipt and LeaseExpiresAt are set by a leased receive.
	Receipt        string `json:"receipt,omitempty"`
	LeaseExpiresAt int64  `json:"lease_expires_at,omitempty"` // Unix ms
	Priority       int    `json:"priority,omitempty"`
	Group          string `json:"group,omitempty"`
	ExpiresAt      int64  `json:"expires_at,omitempty"` // Unix ms
	// DeliverAt and State are shown by the message list (browse).
	DeliverAt int64  `json:"deliver_at,omitempty"`
	State     string `json:"state,omitempty"`
	// Origin, DeadReason and LastReason are set on dead letters.
	Origin     string `json:"origin,omitempty"`
	DeadReason string `json:"dead_reason,omitempty"`
	LastReason string `json:"last_reason,omitempty"`
}

func messageOf(m queue.Message) messageJSON {
	return messageJSON{
		ID: m.ID, Sender: m.Sender, To: m.Receiver, Ts: m.TimeMs, Body: string(m.Body),
		Deliveries: m.Deliveries, Receipt: m.Receipt, LeaseExpiresAt: m.LeaseExpiresMs,
		Priority: m.Priority, Group: m.Group, ExpiresAt: m.ExpiresMs, DeliverAt: m.DeliverAtMs,
		Origin: m.Origin, DeadReason: m.DeadReason, LastReason: m.LastReason,
	}
}

// queueCreate serves POST /api/v1/queues: 201; 409 when it exists.
func (s *Server) queueCreate(w http.ResponseWriter, r *http.Request) {
	var body createQueueRequest
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
	if err := s.take(r, ratelimit.QueueCreates); err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.queues.CreateWith(r.Context(), identity(r).User, body.Name, u, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, queueOf(q))
}

// queueList serves GET /api/v1/queues?waiting=true.
func (s *Server) queueList(w http.ResponseWriter, r *http.Request) {
	waiting, err := queryBool(r, "waiting")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	qs, staleMs, err := s.queues.ListQueues(r.Context(), identity(r).User, waiting, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := queuesResponse{Queues: make([]queueJSON, len(qs))}
	for i, q := range qs {
		out.Queues[i] = queueOf(q)
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, out)
}

// queueDelete serves DELETE /api/v1/queues/{queue}: 204, for the creator or
// an admin.
func (s *Server) queueDelete(w http.ResponseWriter, r *http.Request) {
	if _, err := s.queues.Delete(r.Context(), identity(r).User, r.PathValue("queue"), r.Header.Get("Idempotency-Key")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// queueSend serves POST /api/v1/queues/{queue}/messages: 201 {id,ts}.
func (s *Server) queueSend(w http.ResponseWriter, r *http.Request) {
	var body sendRequest
	idem, err := s.decodeContent(w, r, s.limits.send, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := body.outMessage("")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.take(r, ratelimit.QueueSends); err != nil {
		s.writeError(w, r, err)
		return
	}
	ids, ts, err := s.queues.SendMessages(r.Context(), identity(r).User, r.PathValue("queue"), []queue.OutMessage{m}, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sendResponse{ID: ids[0], Ts: ts})
}

// queuePeek serves GET /api/v1/queues/{queue}/peek?from=: 200 with the
// message the caller would receive, 204 when there is none.
func (s *Server) queuePeek(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msg, found, staleMs, err := s.queues.Peek(r.Context(), identity(r).User, r.PathValue("queue"), r.URL.Query().Get("from"), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	if !found {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, messageOf(msg))
}

// queueReceive serves POST /api/v1/queues/{queue}/receive: 200 with the
// message taken (leased with ack_timeout_ms), 204 when none came within
// wait_ms; with max, 200 with the list of messages taken (empty when none).
// With ack, the leases it names are acknowledged first, all or none (409
// naming the first unknown or lapsed one, and nothing taken).
func (s *Server) queueReceive(w http.ResponseWriter, r *http.Request) {
	var body receiveRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lim := s.queues.Limits()
	if maxMs := lim.MaxAckTimeout.Milliseconds(); body.AckTimeoutMs < 0 || body.AckTimeoutMs > maxMs {
		s.writeError(w, r, errs.New(errs.Invalid, "ack_timeout_ms must be between 0 and %d", maxMs))
		return
	}
	if maxMs := lim.MaxWait.Milliseconds(); body.WaitMs < 0 || body.WaitMs > maxMs {
		s.writeError(w, r, errs.New(errs.Invalid, "wait_ms must be between 0 and %d", maxMs))
		return
	}
	o := queue.ReceiveOptions{
		From:       body.From,
		AckTimeout: time.Duration(body.AckTimeoutMs) * time.Millisecond,
		Wait:       time.Duration(body.WaitMs) * time.Millisecond,
		Ack:        body.Ack,
	}
	if body.Max != nil {
		if *body.Max < 1 || *body.Max > queue.MaxBatch {
			s.writeError(w, r, errs.New(errs.Invalid, "max must be between 1 and %d", queue.MaxBatch))
			return
		}
		o.Max = *body.Max
	}
	if o.Wait > 0 {
		release, err := s.hold(r.Context(), ratelimit.LongPolls, identity(r).User)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
	}
	if body.Max != nil {
		msgs, err := s.queues.ReceiveMany(r.Context(), identity(r).User, r.PathValue("queue"), o, idem)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, messagesOf(msgs))
		return
	}
	msg, found, err := s.queues.Receive(r.Context(), identity(r).User, r.PathValue("queue"), o, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !found {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, messageOf(msg))
}

// queueAck serves POST /api/v1/queues/{queue}/ack {receipt}: 204; 409 when
// the lease lapsed or the receipt is unknown.
func (s *Server) queueAck(w http.ResponseWriter, r *http.Request) {
	var body ackRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.queues.Ack(r.Context(), identity(r).User, r.PathValue("queue"), body.Receipt, idem); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

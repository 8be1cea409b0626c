package api

import (
	"context"
	"errors"
	"strings"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// sendJob is one checked send frame.
type sendJob struct {
	queue, id string
	msg       queue.OutMessage
}

// maxSendsQueued bounds the send frames of a connection waiting for its
// sender: past it, the connection's reader waits (no frame is read until
// one is sent).
const maxSendsQueued = 64

// streamSend checks a send frame as POST …/messages checks its request
// (the token's write scope on the queue, the message's fields, the
// user's queue-sends rate) and queues it for the connection's sender;
// a refusal is the send's error frame.
func (s *Server) streamSend(ctx context.Context, qs *queueStreams, f stream.ClientFrame, id Identity) {
	name := f.Queue.Name
	refuse := func(err error) { qs.sub.Send(stream.SendErrorFrameFor(name, f.ID, err)) }
	if s.queues == nil {
		refuse(errs.New(errs.NotFound, "queues are not served here"))
		return
	}
	if err := permit(id, account.LevelWrite, account.KindQueue, name, "queue "+name); err != nil {
		refuse(err)
		return
	}
	var body outMessageJSON
	if err := decodeObject(f.Message, &body); err != nil {
		e, _ := errors.AsType[*errs.Error](err)
		refuse(errs.New(errs.Invalid, "message: %s", strings.Replace(e.Message, "the body", "it", 1)))
		return
	}
	m, err := body.outMessage("message: ")
	if err != nil {
		refuse(err)
		return
	}
	if s.limiter != nil {
		if err := s.limiter.Take(ctx, ratelimit.QueueSends, id.User); err != nil {
			s.auditLimited("", ratelimit.QueueSends, id.User)
			refuse(err)
			return
		}
	}
	qs.queueSend(sendJob{queue: name, id: f.ID, msg: m})
}

// queueSend hands job to the connection's sender, starting it with the
// first, and waits while maxSendsQueued are queued.
func (qs *queueStreams) queueSend(job sendJob) {
	qs.mu.Lock()
	if qs.sends == nil {
		ctx, cancel := context.WithCancel(qs.ctx)
		qs.sends, qs.stopSender = make(chan sendJob, maxSendsQueued), cancel
		sends := qs.sends
		qs.wg.Go(func() { qs.sender(ctx, sends) })
	}
	sends := qs.sends
	qs.mu.Unlock()
	select {
	case sends <- job:
	case <-qs.ctx.Done():
	}
}

// sender sends the connection's messages one after the other, in the
// order of their frames, and answers each with its sent or error frame,
// until ctx ends. A send's id is its idempotency key: sent again (on this
// connection or another, after a failure), it is not sent twice.
func (qs *queueStreams) sender(ctx context.Context, sends <-chan sendJob) {
	for {
		var job sendJob
		select {
		case <-ctx.Done():
			return
		case job = <-sends:
		}
		ids, ts, err := qs.s.queues.SendMessages(ctx, qs.id.User, job.queue, []queue.OutMessage{job.msg}, job.id)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errs.CodeOf(err) == errs.Internal {
				qs.s.log.Error("stream send failed", "queue", job.queue, "err", err)
			}
			qs.sub.Send(stream.SendErrorFrameFor(job.queue, job.id, err))
			continue
		}
		qs.sub.Send(stream.EncodeSent(job.queue, job.id, ids[0], ts))
	}
}

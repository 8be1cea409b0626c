package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// MessageService is what the routes about one message, threads, pins and
// mentions need from chat.
type MessageService interface {
	PostReply(ctx context.Context, user, room, text string, to []string, replyTo uint64, idempotencyKey string) (chat.PostResult, error)
	Edit(ctx context.Context, user, room string, seq uint64, text, idempotencyKey string) (chat.ChangeResult, error)
	DeleteMessage(ctx context.Context, user, room string, seq uint64, isAdmin bool, idempotencyKey string) (chat.ChangeResult, error)
	React(ctx context.Context, user, room string, seq uint64, emoji string, undo bool, idempotencyKey string) (chat.ChangeResult, error)
	Pin(ctx context.Context, user, room string, seq uint64, undo bool, idempotencyKey string) (chat.ChangeResult, error)
	Message(ctx context.Context, user, room string, seq uint64, stale bool) (chat.Event, int64, error)
	Thread(ctx context.Context, user, room string, root, after uint64, limit int, stale bool) (chat.ThreadPage, int64, error)
	Pins(ctx context.Context, user, room string, stale bool) ([]chat.Event, int64, error)
	Mentions(ctx context.Context, user, after string, limit int, stale bool) (chat.MentionsPage, int64, error)
}

var _ MessageService = (*chat.Service)(nil)

// editRequest is the body of PATCH /api/v1/rooms/{room}/messages/{seq}.
type editRequest struct {
	Text string `json:"text"`
	writeMeta
}

// pinsResponse is the body of GET /api/v1/rooms/{room}/pins.
type pinsResponse struct {
	Pins []chat.Event `json:"pins"`
}

// messageRoutes registers the routes about one message, threads, pins and
// mentions.
func (s *Server) messageRoutes() {
	s.handleAuth("GET /api/v1/rooms/{room}/messages/{seq}", s.messageGet)
	s.handleAuth("PATCH /api/v1/rooms/{room}/messages/{seq}", s.messageEdit)
	s.handleAuth("DELETE /api/v1/rooms/{room}/messages/{seq}", s.messageDelete)
	s.handleAuth("PUT /api/v1/rooms/{room}/messages/{seq}/reactions/{emoji}", s.messageReact(false))
	s.handleAuth("DELETE /api/v1/rooms/{room}/messages/{seq}/reactions/{emoji}", s.messageReact(true))
	s.handleAuth("GET /api/v1/rooms/{room}/messages/{seq}/thread", s.messageThread)
	s.handleAuth("PUT /api/v1/rooms/{room}/pins/{seq}", s.messagePin(false))
	s.handleAuth("DELETE /api/v1/rooms/{room}/pins/{seq}", s.messagePin(true))
	s.handleAuth("GET /api/v1/rooms/{room}/pins", s.roomPins)
	s.handleAuth("GET /api/v1/mentions", s.mentions)
}

// messages returns the room service's message calls.
func (s *Server) messages() MessageService { return s.rooms }

// pathSeq reads the {seq} path parameter.
func pathSeq(r *http.Request) (uint64, error) {
	v := r.PathValue("seq")
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil || seq == 0 {
		return 0, errs.New(errs.Invalid, "seq must be a positive integer, got %q", clip(v))
	}
	return seq, nil
}

// messageGet serves GET /api/v1/rooms/{room}/messages/{seq}: one event as
// the caller may see it, a message with its current state.
func (s *Server) messageGet(w http.ResponseWriter, r *http.Request) {
	seq, err := pathSeq(r)
	stale := false
	if err == nil {
		stale, err = parseConsistency(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ev, staleMs, err := s.messages().Message(r.Context(), identity(r).User, r.PathValue("room"), seq, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, ev)
}

// messageEdit serves PATCH /api/v1/rooms/{room}/messages/{seq} {text}: 200
// {seq,ts} of the edit event.
func (s *Server) messageEdit(w http.ResponseWriter, r *http.Request) {
	var body editRequest
	idem, err := s.decodeContent(w, r, s.limits.post, &body)
	var seq uint64
	if err == nil {
		seq, err = pathSeq(r)
	}
	if err == nil {
		err = s.take(r, ratelimit.Posts)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.messages().Edit(r.Context(), identity(r).User, r.PathValue("room"), seq, body.Text, idem)
	s.writeChange(w, r, res, err)
}

// messageDelete serves DELETE /api/v1/rooms/{room}/messages/{seq}: 200
// {seq,ts} of the delete event (seq 0: it was deleted already).
func (s *Server) messageDelete(w http.ResponseWriter, r *http.Request) {
	seq, err := pathSeq(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	res, err := s.messages().DeleteMessage(r.Context(), id.User, r.PathValue("room"), seq, id.Admin, r.Header.Get("Idempotency-Key"))
	s.writeChange(w, r, res, err)
}

// messageReact serves PUT (and with undo DELETE)
// /api/v1/rooms/{room}/messages/{seq}/reactions/{emoji}.
func (s *Server) messageReact(undo bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		seq, err := pathSeq(r)
		if err == nil {
			err = s.take(r, ratelimit.Posts)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res, err := s.messages().React(r.Context(), identity(r).User, r.PathValue("room"), seq, r.PathValue("emoji"), undo, r.Header.Get("Idempotency-Key"))
		s.writeChange(w, r, res, err)
	}
}

// messagePin serves PUT (and with undo DELETE) /api/v1/rooms/{room}/pins/{seq}.
func (s *Server) messagePin(undo bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		seq, err := pathSeq(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res, err := s.messages().Pin(r.Context(), identity(r).User, r.PathValue("room"), seq, undo, r.Header.Get("Idempotency-Key"))
		s.writeChange(w, r, res, err)
	}
}

// writeChange answers a change with 200 {seq,ts} or the error.
func (s *Server) writeChange(w http.ResponseWriter, r *http.Request, res chat.ChangeResult, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// pageParams reads the optional limit (1 to chat.MaxHistoryLimit) and
// consistency of a paged read.
func pageParams(r *http.Request) (limit int, stale bool, err error) {
	n, has, err := queryUint(r, "limit")
	if err == nil && has && (n == 0 || n > chat.MaxHistoryLimit) {
		err = errs.New(errs.Invalid, "limit must be between 1 and %d", chat.MaxHistoryLimit)
	}
	if err != nil {
		return 0, false, err
	}
	stale, err = parseConsistency(r)
	return int(n), stale, err
}

// messageThread serves GET /api/v1/rooms/{room}/messages/{seq}/thread
// ?after=&limit=: the root and a page of its replies in seq order.
func (s *Server) messageThread(w http.ResponseWriter, r *http.Request) {
	seq, err := pathSeq(r)
	var after uint64
	if err == nil {
		after, _, err = queryUint(r, "after")
	}
	limit, stale := 0, false
	if err == nil {
		limit, stale, err = pageParams(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, staleMs, err := s.messages().Thread(r.Context(), identity(r).User, r.PathValue("room"), seq, after, limit, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Replies == nil {
		page.Replies = []chat.Event{}
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, page)
}

// roomPins serves GET /api/v1/rooms/{room}/pins.
func (s *Server) roomPins(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pins, staleMs, err := s.messages().Pins(r.Context(), identity(r).User, r.PathValue("room"), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if pins == nil {
		pins = []chat.Event{}
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, pinsResponse{Pins: pins})
}

// mentions serves GET /api/v1/mentions?after=&limit=: the messages that
// mention the caller across their rooms.
func (s *Server) mentions(w http.ResponseWriter, r *http.Request) {
	limit, stale, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, staleMs, err := s.messages().Mentions(r.Context(), identity(r).User, r.URL.Query().Get("after"), limit, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, page)
}

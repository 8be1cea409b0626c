package api

import (
	"context"
	"net/http"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// RoomService is what the room routes need from chat, including the
// message routes (MessageService) and the moderation routes
// (ModerationService).
type RoomService interface {
	MessageService
	ModerationService
	Create(ctx context.Context, user string, req chat.CreateRequest, idempotencyKey string) (chat.Room, error)
	Delete(ctx context.Context, user, room string, isAdmin bool, idempotencyKey string) error
	Join(ctx context.Context, user, room, password, idempotencyKey string) (chat.Room, error)
	Leave(ctx context.Context, user, room, idempotencyKey string) error
	MarkRead(ctx context.Context, user, room string, seq uint64, idempotencyKey string) (uint64, error)
	Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (chat.PostResult, error)
	Members(ctx context.Context, user, room string, stale bool) ([]chat.Member, int64, error)
	History(ctx context.Context, user, room string, q chat.HistoryQuery, stale bool) ([]chat.Event, int64, error)
	List(ctx context.Context, user string, stale bool) ([]chat.RoomSummary, int64, error)
}

var _ RoomService = (*chat.Service)(nil)

// createRoomRequest is the body of POST /api/v1/rooms.
type createRoomRequest struct {
	Name       string `json:"name"`
	Private    bool   `json:"private"`
	Password   string `json:"password,omitempty"`
	MaxMembers int    `json:"max_members,omitempty"`
	InviteOnly bool   `json:"invite_only,omitempty"`
	writeMeta
}

// joinRequest is the body of POST /api/v1/rooms/{room}/join (optional).
type joinRequest struct {
	Password string `json:"password,omitempty"`
	writeMeta
}

// requestOnly is the optional body of routes that take no parameters.
type requestOnly struct {
	writeMeta
}

// readRequest is the body of POST /api/v1/rooms/{room}/read.
type readRequest struct {
	Seq *uint64 `json:"seq"`
	writeMeta
}

// postRequest is the body of POST /api/v1/rooms/{room}/messages.
type postRequest struct {
	Text string   `json:"text"`
	To   []string `json:"to,omitempty"`
	// ReplyTo makes the post a reply in the thread of that message.
	ReplyTo uint64 `json:"reply_to,omitempty"`
	// Files are ids of the poster's uploads to attach (files.go); with
	// them the text may be empty.
	Files []string `json:"files,omitempty"`
	writeMeta
}

// roomsResponse is the body of GET /api/v1/rooms.
type roomsResponse struct {
	Rooms []chat.RoomSummary `json:"rooms"`
}

// leaveResponse is the body of a leave.
type leaveResponse struct {
	Room string `json:"room"`
}

// readResponse is the body of a mark-read.
type readResponse struct {
	Room     string `json:"room"`
	LastRead uint64 `json:"last_read"`
}

// membersResponse is the body of GET /api/v1/rooms/{room}/members.
type membersResponse struct {
	Members []chat.Member `json:"members"`
}

// historyResponse is the body of GET /api/v1/rooms/{room}/messages.
type historyResponse struct {
	Messages []chat.Event `json:"messages"`
}

// roomCreate serves POST /api/v1/rooms: 201 with the room; 409 when the name
// is in use.
func (s *Server) roomCreate(w http.ResponseWriter, r *http.Request) {
	var body createRoomRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.MaxMembers < 0 {
		s.writeError(w, r, errs.New(errs.Invalid, "max_members must be positive"))
		return
	}
	if err := s.take(r, ratelimit.RoomCreates); err != nil {
		s.writeError(w, r, err)
		return
	}
	req := chat.CreateRequest{Name: body.Name, Private: body.Private, Password: body.Password, MaxMembers: body.MaxMembers, InviteOnly: body.InviteOnly}
	room, err := s.rooms.Create(r.Context(), identity(r).User, req, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, room)
}

// roomList serves GET /api/v1/rooms: the rooms visible to the caller.
func (s *Server) roomList(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rooms, staleMs, err := s.rooms.List(r.Context(), identity(r).User, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rooms == nil {
		rooms = []chat.RoomSummary{}
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, roomsResponse{Rooms: rooms})
}

// roomDelete serves DELETE /api/v1/rooms/{room}: 204, for the owner or an
// admin.
func (s *Server) roomDelete(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	if err := s.rooms.Delete(r.Context(), id.User, r.PathValue("room"), id.Admin, r.Header.Get("Idempotency-Key")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// roomJoin serves POST /api/v1/rooms/{room}/join: 200 with the room; 403
// for a wrong password, 409 when the room is full.
func (s *Server) roomJoin(w http.ResponseWriter, r *http.Request) {
	var body joinRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	room, err := s.rooms.Join(r.Context(), identity(r).User, r.PathValue("room"), body.Password, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, room)
}

// roomLeave serves POST /api/v1/rooms/{room}/leave: 200.
func (s *Server) roomLeave(w http.ResponseWriter, r *http.Request) {
	var body requestOnly
	idem, err := s.decodeWrite(w, r, smallBody, &body, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	room := r.PathValue("room")
	if err := s.rooms.Leave(r.Context(), identity(r).User, room, idem); err != nil {
		s.writeError(w, r, err)
		return
	}
	canonical, _ := chat.CanonicalRoom(room) // Leave checked it
	writeJSON(w, http.StatusOK, leaveResponse{Room: canonical})
}

// roomRead serves POST /api/v1/rooms/{room}/read {seq}: 200 with the
// caller's read marker.
func (s *Server) roomRead(w http.ResponseWriter, r *http.Request) {
	var body readRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Seq == nil {
		s.writeError(w, r, errs.New(errs.Invalid, "seq is missing"))
		return
	}
	room := r.PathValue("room")
	marker, err := s.rooms.MarkRead(r.Context(), identity(r).User, room, *body.Seq, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	canonical, _ := chat.CanonicalRoom(room)
	writeJSON(w, http.StatusOK, readResponse{Room: canonical, LastRead: marker})
}

// roomMembers serves GET /api/v1/rooms/{room}/members.
func (s *Server) roomMembers(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	members, staleMs, err := s.rooms.Members(r.Context(), identity(r).User, r.PathValue("room"), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if members == nil {
		members = []chat.Member{}
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, membersResponse{Members: members})
}

// roomPost serves POST /api/v1/rooms/{room}/messages: 201 {seq,ts,sender};
// with reply_to, a reply in that message's thread.
func (s *Server) roomPost(w http.ResponseWriter, r *http.Request) {
	var body postRequest
	idem, err := s.decodeContent(w, r, s.limits.post, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.take(r, ratelimit.Posts); err != nil {
		s.writeError(w, r, err)
		return
	}
	var res chat.PostResult
	switch {
	case len(body.Files) > 0 && s.files == nil:
		err = errs.New(errs.Invalid, "files: this server stores no files")
	case len(body.Files) > 0:
		res, err = s.files.PostFiles(r.Context(), identity(r).User, r.PathValue("room"), body.Text, body.To, body.ReplyTo, body.Files, idem)
	case body.ReplyTo != 0:
		res, err = s.messages().PostReply(r.Context(), identity(r).User, r.PathValue("room"), body.Text, body.To, body.ReplyTo, idem)
	default:
		res, err = s.rooms.Post(r.Context(), identity(r).User, r.PathValue("room"), body.Text, body.To, idem)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}

// roomHistory serves GET /api/v1/rooms/{room}/messages?after=&before=&limit=:
// a page of events in seq order; 410 history_compacted when events after
// `after` were removed by retention.
func (s *Server) roomHistory(w http.ResponseWriter, r *http.Request) {
	var q chat.HistoryQuery
	var err error
	q.After, q.HasAfter, err = queryUint(r, "after")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if q.Before, _, err = queryUint(r, "before"); err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, hasLimit, err := queryUint(r, "limit")
	if err == nil && hasLimit && (limit == 0 || limit > chat.MaxHistoryLimit) {
		err = errs.New(errs.Invalid, "limit must be between 1 and %d", chat.MaxHistoryLimit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q.Limit = int(limit)
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	events, staleMs, err := s.rooms.History(r.Context(), identity(r).User, r.PathValue("room"), q, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if events == nil {
		events = []chat.Event{}
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, historyResponse{Messages: events})
}

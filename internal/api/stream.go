package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// StreamService is what GET /api/v1/stream needs: the node's live streams.
type StreamService interface {
	// Connect returns a subscriber receiving events as user may see them.
	Connect(user string) *stream.Subscriber
	// Subscribe checks that the subscriber's user may read room and
	// subscribes it after seq *after (nil: from now). It returns the room's
	// canonical name.
	Subscribe(ctx context.Context, sub *stream.Subscriber, room string, after *uint64) (string, error)
	// Unsubscribe ends the subscription to room.
	Unsubscribe(sub *stream.Subscriber, room string)
	// Disconnect ends every subscription and closes the subscriber.
	Disconnect(sub *stream.Subscriber)
	// SubscribeInbox makes the subscriber follow its user's mention inbox
	// from now: mention frames for every later mention, in any room.
	SubscribeInbox(ctx context.Context, sub *stream.Subscriber) error
	// Typing fans a typing frame from the subscriber out to room's
	// subscribers, at most one per second per user and room.
	Typing(sub *stream.Subscriber, room string)
}

// Stream connection timing.
const (
	// streamAuthWait is how long a connection without an Authorization
	// header has to send its auth frame.
	streamAuthWait = 5 * time.Second
	// streamPing is how often the server pings an idle connection.
	streamPing = 30 * time.Second
	// streamWriteWait bounds one frame's write (and the ping's answer);
	// the writer gives a batch of frames that long per writeBatchFrames.
	streamWriteWait = 15 * time.Second
	// writeBatchFrames is how many frames of a batch share one
	// streamWriteWait.
	writeBatchFrames = 256
)

// streamParams are the subscriptions asked for on the URL:
// ?rooms=a,b&after=a:12,b:7.
type streamParams struct {
	rooms []string
	after map[string]uint64
}

// parseStreamParams reads the URL's subscriptions and refuses a token in
// the URL: it would end up in logs and browser history.
func parseStreamParams(q url.Values) (streamParams, error) {
	for _, k := range []string{"token", "access_token", "auth", "authorization"} {
		if q.Has(k) {
			return streamParams{}, errs.New(errs.Invalid, "never put the token in the URL: send it in the Authorization header or as the first frame {\"type\":\"auth\",\"token\":\"...\"}")
		}
	}
	p := streamParams{after: map[string]uint64{}}
	seen := map[string]bool{}
	add := func(room string) {
		if !seen[strings.ToLower(room)] {
			seen[strings.ToLower(room)] = true
			p.rooms = append(p.rooms, room)
		}
	}
	for _, room := range splitList(q.Get("rooms")) {
		add(room)
	}
	for _, item := range splitList(q.Get("after")) {
		room, seq, ok := strings.Cut(item, ":")
		n, err := strconv.ParseUint(seq, 10, 64)
		if !ok || room == "" || err != nil {
			return streamParams{}, errs.New(errs.Invalid, "after must list room:seq pairs separated by commas, like after=a:12,b:7")
		}
		add(room)
		p.after[strings.ToLower(room)] = n
	}
	if len(p.rooms) > maxURLRooms {
		return streamParams{}, errs.New(errs.Invalid, "at most %d rooms on the URL; subscribe to more with frames", maxURLRooms)
	}
	return p, nil
}

// maxURLRooms bounds the subscriptions of one URL.
const maxURLRooms = 256

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// originAllowed reports whether a browser page from origin may open a
// stream: an origin on the host the request was sent to, one of the
// cluster's advertised HTTP addresses (any scheme), or a configured allowed
// origin (compared with its scheme when it has one). Requests without an
// Origin header come from non-browser clients and are allowed.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if s.origins == nil {
		return false
	}
	for _, a := range s.origins() {
		a = strings.TrimRight(a, "/")
		if strings.Contains(a, "://") {
			if strings.EqualFold(a, u.Scheme+"://"+u.Host) {
				return true
			}
		} else if strings.EqualFold(a, u.Host) {
			return true
		}
	}
	return false
}

// streamHandler serves GET /api/v1/stream: checks the URL and the Origin,
// authenticates by the Authorization header or the first frame, takes one
// of the user's stream slots (ratelimit.Streams), then runs the connection
// until either side ends it.
func (s *Server) streamHandler(w http.ResponseWriter, r *http.Request) {
	params, err := parseStreamParams(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.originAllowed(r) {
		s.writeError(w, r, errs.New(errs.Forbidden, "origin %q may not open streams: use the cluster's own address or configure --allowed-origin", r.Header.Get("Origin")))
		return
	}
	var id Identity
	var token string // the bearer token, the key of the stream's session
	byHeader := r.Header.Get("Authorization") != ""
	release := func() {}
	defer func() { release() }()
	if byHeader {
		if id, err = s.auth(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		token, _, _ = bearerToken(r)
		// Over the limit: 429 before the upgrade.
		if release, err = s.hold(r.Context(), ratelimit.Streams, id.User); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// The server's read and write timeouts are for requests; a stream
	// lives on, with its own pings and write deadlines.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // Origin checked above
	if err != nil {
		return // Accept answered the request
	}
	defer c.CloseNow()
	c.SetReadLimit(max(stream.MaxClientFrame, s.limits.send.body+stream.MaxClientFrame)) // send frames carry a message
	if !byHeader {
		if id, token, err = s.streamAuthFrame(r, c); err != nil {
			closeAuthFailed(r.Context(), c, err)
			return
		}
		// The user is known only now: over the limit, an error frame and
		// close code 1013 (try again later) stand for the 429.
		if release, err = s.hold(r.Context(), ratelimit.Streams, id.User); err != nil {
			_ = writeFrame(r.Context(), c, stream.ErrorFrameFor("", err))
			_ = c.Close(websocket.StatusTryAgainLater, "too many streams")
			return
		}
	}
	if id.Token != "" {
		token = id.Token
	}
	if s.streamConnected != nil {
		if release := s.streamConnected(id.User); release != nil {
			defer release()
		}
	}
	s.runStream(withIdentity(context.Background(), id), c, id, token, params)
}

// streamAuthFrame reads the first frame, which must be an auth frame with a
// valid token, within streamAuthWait, and returns the identity and token.
func (s *Server) streamAuthFrame(r *http.Request, c *websocket.Conn) (Identity, string, error) {
	ctx, cancel := context.WithTimeout(r.Context(), streamAuthWait)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		return Identity{}, "", errs.New(errs.Unauthorized, "send {\"type\":\"auth\",\"token\":\"...\"} first, within %v", streamAuthWait)
	}
	f, err := stream.DecodeClientFrame(b)
	if err != nil || f.Type != stream.TypeAuth {
		return Identity{}, "", errs.New(errs.Unauthorized, "the first frame must be {\"type\":\"auth\",\"token\":\"...\"} (or send the Authorization header)")
	}
	ar := r.Clone(r.Context())
	ar.Header.Set("Authorization", "Bearer "+f.Token)
	id, err := s.auth(ar)
	return id, f.Token, err
}

// writeFrame writes one text frame within streamWriteWait.
func writeFrame(ctx context.Context, c *websocket.Conn, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, streamWriteWait)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, frame)
}

// runStream runs an authenticated connection: a reader goroutine applies
// the client's frames, a pinger keeps it alive, and this goroutine writes
// the subscriber's frames until the connection, the client, the node or
// the session (token) ends.
func (s *Server) runStream(base context.Context, c *websocket.Conn, id Identity, token string, params streamParams) {
	sub := s.streams.Connect(id.User)
	defer s.streams.Disconnect(sub)
	defer s.guardStream(sub, id, token)()
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	go func() { // the node closing its streams ends everything
		select {
		case <-sub.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		// Mentions come from every room: not for a token narrowed to some.
		if id.Scopes.Has(account.LevelRead) {
			if err := s.streams.SubscribeInbox(ctx, sub); err != nil && ctx.Err() == nil {
				s.log.Debug("mention inbox unavailable", "user", id.User, "err", err)
			}
		}
		for _, room := range params.rooms {
			var after *uint64
			if a, ok := params.after[strings.ToLower(room)]; ok {
				after = &a
			}
			if streamPermit(sub, id, account.LevelRead, account.KindRoom, room) {
				s.streamSubscribe(ctx, sub, room, after)
			}
		}
		s.streamRead(ctx, c, sub, id, token)
	}()
	go s.streamPing(ctx, c, cancel)
	err := s.streamWrite(ctx, c, sub)
	switch {
	case errors.Is(err, stream.ErrSessionEnded):
		closeSessionEnded(c)
	case errors.Is(err, stream.ErrSlowConsumer):
		_ = writeFrame(context.Background(), c, stream.EncodeError("", stream.CodeSlowConsumer, "the connection fell too far behind; reconnect and resume from the last seq you saw"))
		_ = c.Close(websocket.StatusPolicyViolation, "slow consumer")
	case errors.Is(err, stream.ErrClosed):
		_ = c.Close(websocket.StatusGoingAway, "server shutting down")
	default:
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
	cancel()
	<-readerDone
}

// streamWrite writes the subscriber's frames until an error. Once the
// subscriber was ended (its session ended) it writes nothing more, not even
// the rest of a batch already taken.
func (s *Server) streamWrite(ctx context.Context, c *websocket.Conn, sub *stream.Subscriber) error {
	var buf [][]byte
	for {
		var err error
		buf, err = sub.Next(ctx, buf)
		if err != nil {
			if !errors.Is(err, stream.ErrSlowConsumer) && !errors.Is(err, stream.ErrSessionEnded) && isClosed(sub) {
				return stream.ErrClosed // the node closes its streams
			}
			return err
		}
		// One deadline for the batch, not one per frame: under load a
		// context and its timer per frame cost more than the frame.
		wctx, cancel := context.WithTimeout(ctx, streamWriteWait*time.Duration(1+len(buf)/writeBatchFrames))
		for _, f := range buf {
			if err := sub.Ended(); err != nil {
				cancel()
				return err
			}
			if err := c.Write(wctx, websocket.MessageText, f); err != nil {
				cancel()
				return err
			}
		}
		cancel()
	}
}

// isClosed reports whether the subscriber was closed (by the node).
func isClosed(sub *stream.Subscriber) bool {
	select {
	case <-sub.Done():
		return true
	default:
		return false
	}
}

// streamRead applies the client's frames until the connection ends. Each
// frame must be allowed by the token's scopes (id), and each subscribe
// frame checks token again first.
func (s *Server) streamRead(ctx context.Context, c *websocket.Conn, sub *stream.Subscriber, id Identity, token string) {
	kvs := s.newKVStreams(ctx, sub)
	defer kvs.close()
	qs := s.newQueueStreams(ctx, sub, id)
	defer qs.close()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		f, err := stream.DecodeClientFrame(b)
		if err != nil {
			sub.Send(stream.ErrorFrameFor("", err))
			continue
		}
		if f.Queue != nil {
			s.streamQueueFrame(ctx, qs, f, id, token)
			continue
		}
		switch {
		case f.KV != nil && f.Type == stream.TypeSubscribe:
			if streamPermit(sub, id, account.LevelRead, "", "") && s.recheckSubscribe(ctx, sub, token, f.KV.Name()) {
				kvs.subscribe(*f.KV)
			}
			continue
		case f.KV != nil && f.Type == stream.TypeUnsubscribe:
			kvs.unsubscribe(f.KV.Name())
			continue
		}
		switch f.Type {
		case stream.TypeSubscribe:
			if streamPermit(sub, id, account.LevelRead, account.KindRoom, f.Room) && s.recheckSubscribe(ctx, sub, token, f.Room) {
				s.streamSubscribe(ctx, sub, f.Room, f.After)
			}
		case stream.TypeUnsubscribe:
			s.streams.Unsubscribe(sub, f.Room)
		case stream.TypeTyping:
			if streamPermit(sub, id, account.LevelWrite, account.KindRoom, f.Room) {
				s.streams.Typing(sub, f.Room)
			}
		case stream.TypeAuth:
			sub.Send(stream.EncodeError("", stream.CodeInvalid, "already authenticated"))
		}
	}
}

// streamPermit checks a stream frame against the token's scopes (permit)
// and reports a refusal as the room's (or the connection's) error frame.
func streamPermit(sub *stream.Subscriber, id Identity, level account.Level, kind, name string) bool {
	what := "kv watches"
	if kind != "" {
		what = "room " + name
	}
	if err := permit(id, level, kind, name, what); err != nil {
		sub.Send(stream.ErrorFrameFor(name, err))
		return false
	}
	return true
}

// streamSubscribe subscribes and reports a refusal as the room's error frame.
func (s *Server) streamSubscribe(ctx context.Context, sub *stream.Subscriber, room string, after *uint64) {
	name, err := s.streams.Subscribe(ctx, sub, room, after)
	if err != nil && ctx.Err() == nil {
		if errs.CodeOf(err) == errs.Internal {
			s.log.Error("stream subscribe failed", "room", room, "err", err)
		}
		sub.Send(stream.ErrorFrameFor(name, err))
	}
}

// streamPing pings the client every streamPing; a missing pong ends the
// connection.
func (s *Server) streamPing(ctx context.Context, c *websocket.Conn, cancel context.CancelFunc) {
	t := time.NewTicker(streamPing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, streamWriteWait)
		err := c.Ping(pctx)
		pcancel()
		if err != nil {
			cancel()
			return
		}
	}
}

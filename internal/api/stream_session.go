package api

import (
	"context"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/stream"
)

// A stream lives no longer than its session (docs/STREAMS-AUTH.md): the
// Server's stream.Guard ends it when its token is logged out through this
// node, when a recheck (one per distinct token every StreamRecheck) or a
// subscribe frame finds the token refused, and at the session's expiry.
// The end stops delivery at once (stream.Subscriber.End); the writer then
// sends the connection's unauthorized error frame and closes with
// stream.CloseUnauthorized.

// sessionEndedMessage is the message of the unauthorized frame that ends a
// stream whose session ended.
const sessionEndedMessage = "your session ended (signed out, revoked or expired): sign in again"

// newStreamGuard returns the Guard of the Server's streams, checking
// tokens every interval (stream.DefaultRecheck when zero).
func (s *Server) newStreamGuard(interval time.Duration) *stream.Guard {
	return stream.NewGuard(stream.GuardConfig{Check: s.checkStreamToken, Interval: interval, Logger: s.log})
}

// checkStreamToken implements stream.GuardConfig.Check.
func (s *Server) checkStreamToken(ctx context.Context, token string) error {
	_, err := s.authToken(ctx, token)
	return err
}

// authToken authenticates token as the Authorization header of a request
// would be.
func (s *Server) authToken(ctx context.Context, token string) (Identity, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/stream", nil)
	if err != nil {
		return Identity{}, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	return s.auth(r)
}

// guardStream watches sub's session until the stop returned is called; the
// session's end ends sub. A stream without a token (a Server without
// accounts) has no session to watch.
func (s *Server) guardStream(sub *stream.Subscriber, id Identity, token string) (stop func()) {
	if token == "" {
		return func() {}
	}
	return s.guard.Watch(token, id.Expires, func() { sub.End(stream.ErrSessionEnded) })
}

// recheckSubscribe checks token again before a subscribe frame is applied
// and reports whether the subscription may go ahead. A refused token ends
// every stream it holds open here, this one included; any other failure
// refuses this subscription with the room's error frame.
func (s *Server) recheckSubscribe(ctx context.Context, sub *stream.Subscriber, token, room string) bool {
	return s.recheckToken(ctx, sub, token, room, func(err error) []byte { return stream.ErrorFrameFor(room, err) })
}

// recheckToken is recheckSubscribe for any subscription: what names it in
// the log, errorFrame makes its error frame.
func (s *Server) recheckToken(ctx context.Context, sub *stream.Subscriber, token, what string, errorFrame func(error) []byte) bool {
	if token == "" {
		return true
	}
	_, err := s.authToken(ctx, token)
	switch {
	case err == nil:
		return true
	case errs.CodeOf(err) == errs.Unauthorized:
		s.guard.Revoke(token)
		sub.End(stream.ErrSessionEnded) // watched or not
	case ctx.Err() == nil:
		if errs.CodeOf(err) == errs.Internal {
			s.log.Error("stream subscribe: session check failed", "subscription", what, "err", err)
		}
		sub.Send(errorFrame(err))
	}
	return false
}

// closeSessionEnded ends a connection whose session ended: the
// unauthorized error frame, then close stream.CloseUnauthorized.
func closeSessionEnded(c *websocket.Conn) {
	_ = writeFrame(context.Background(), c, stream.EncodeError("", stream.CodeUnauthorized, sessionEndedMessage))
	_ = c.Close(stream.CloseUnauthorized, "unauthorized")
}

// closeAuthFailed ends a connection whose auth frame was refused with the
// error's frame, then close stream.CloseUnauthorized when the token was
// refused, and otherwise (the session could not be read) 1013, try again
// later.
func closeAuthFailed(ctx context.Context, c *websocket.Conn, err error) {
	_ = writeFrame(ctx, c, stream.ErrorFrameFor("", err))
	if errs.CodeOf(err) == errs.Unauthorized {
		_ = c.Close(stream.CloseUnauthorized, "unauthorized")
		return
	}
	_ = c.Close(websocket.StatusTryAgainLater, "cannot check the token now")
}

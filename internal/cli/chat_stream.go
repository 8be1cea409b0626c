package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/parley-chat/parley/client"
)

// errStreamLost marks a stream that ended in transport (closed by the node,
// reset, slow consumer): the chat resumes on another node.
var errStreamLost = errors.New("stream lost")

// errSessionEnded ends a chat whose session ended (signed out, revoked,
// expired): no node would take the token, so the chat does not reconnect.
var errSessionEnded = errors.New("session ended: sign in again")

// isSessionEnded reports whether err says the chat's token is no longer
// accepted: the stream's unauthorized frame, or a 401 answer.
func isSessionEnded(err error) bool {
	if errors.Is(err, client.ErrSessionEnded) {
		return true
	}
	ce, ok := errors.AsType[*client.Error](err)
	return ok && ce.Status == http.StatusUnauthorized
}

// streamFeed is a roomFeed over the live stream (WebSocket GET
// /api/v1/stream): events arrive as they are applied. It opens the stream on
// its first Next, resuming after the seq it was opened with; a server without
// the stream (404) is followed by polling its history instead.
type streamFeed struct {
	c     *client.Client
	room  string
	after uint64

	s        *client.Stream
	fallback roomFeed
}

var _ roomFeed = (*streamFeed)(nil)

// newStreamFeed returns a stream feed of room after seq after.
func newStreamFeed(c *client.Client, room string, after uint64) roomFeed {
	return &streamFeed{c: c, room: room, after: after}
}

// Next implements roomFeed: the next event of the room, skipping ready and
// presence frames. An error frame for the room ends the feed with that error
// (history_compacted, forbidden, not_found); the end of the session is
// client.ErrSessionEnded; a stream the server closed otherwise, or lost, is
// errStreamLost, which the chat answers by resuming elsewhere.
func (f *streamFeed) Next(ctx context.Context) (client.Event, error) {
	if f.fallback != nil {
		return f.fallback.Next(ctx)
	}
	if f.s == nil {
		s, err := f.c.Stream(ctx, client.StreamOptions{Resume: map[string]uint64{f.room: f.after}})
		if err != nil {
			if apiErr, ok := errors.AsType[*client.Error](err); ok && apiErr.Status == http.StatusNotFound {
				f.fallback = newHistoryFeed(f.c, f.room, f.after)
				return f.fallback.Next(ctx)
			}
			if _, ok := errors.AsType[*client.Error](err); ok {
				return client.Event{}, err
			}
			return client.Event{}, fmt.Errorf("%w: %w", errStreamLost, err)
		}
		f.s = s
	}
	for {
		fr, err := f.s.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return client.Event{}, ctx.Err()
			}
			if errors.Is(err, client.ErrSessionEnded) {
				return client.Event{}, err
			}
			return client.Event{}, fmt.Errorf("%w: %w", errStreamLost, err)
		}
		switch {
		case fr.Type == client.FrameEvent && fr.Room == f.room:
			ev := fr.Event()
			f.after = ev.Seq
			return ev, nil
		case fr.Type == client.FrameMention:
			// Someone mentioned the user, here or in another room: shown as
			// it happens, outside the room's order.
			return client.Event{Kind: "mention", Room: fr.Room, Seq: fr.Seq, Ts: fr.Ts, Sender: fr.Sender}, nil
		case fr.Type == client.FrameError && fr.Code == "slow_consumer":
			return client.Event{}, fmt.Errorf("%w: %w", errStreamLost, errSlowConsumer)
		case fr.Type == client.FrameError && (fr.Room == f.room || fr.Room == ""):
			return client.Event{}, fmt.Errorf("%s (%s)", fr.Message, fr.Code)
		}
	}
}

// Close implements roomFeed.
func (f *streamFeed) Close() error {
	if f.s != nil {
		return f.s.Close()
	}
	return nil
}

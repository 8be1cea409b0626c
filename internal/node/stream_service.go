package node

import (
	"context"
	"github.com/parley-chat/parley/internal/partition"
	"strings"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/stream"
)

// streamService is the API's live streams: the Hub the partition feeds
// publish into, and the router for the subscribe check.
type streamService struct {
	hub    *stream.Hub
	router *partition.Router
	// typing sends a typing frame to the other nodes' subscribers.
	typing func(room string, frame []byte)
}

var _ api.StreamService = streamService{}

// Connect implements api.StreamService.
func (s streamService) Connect(user string) *stream.Subscriber { return s.hub.Connect(user) }

// Disconnect implements api.StreamService.
func (s streamService) Disconnect(sub *stream.Subscriber) { s.hub.Disconnect(sub) }

// Subscribe implements api.StreamService: it checks with a linearizable
// read that the subscriber's user may read the room (chat.CheckRead: a
// public room, or a private one the user is a member of) and subscribes
// from after, or from the room's last seq when after is nil. It returns the
// room's canonical name.
func (s streamService) Subscribe(ctx context.Context, sub *stream.Subscriber, room string, after *uint64) (string, error) {
	name, err := chat.CanonicalRoom(room)
	if err != nil {
		return room, err
	}
	var rm chat.Room
	_, err = s.router.Read(ctx, s.router.PartitionOf(name), false, func(r state.Reader) error {
		var err error
		rm, err = chat.CheckRead(r, name, sub.User())
		return err
	})
	if err != nil {
		return name, err
	}
	from := rm.LastSeq
	if after != nil {
		// An after older than the retained history gets its
		// history_compacted frame from the Hub's first catch-up read.
		from = *after
	}
	s.hub.Subscribe(sub, name, from)
	return name, nil
}

// SubscribeInbox implements api.StreamService: the subscriber follows its
// user's mention inbox from its current end (a linearizable read of the
// inbox's partition), so every later mention reaches it as a mention frame.
func (s streamService) SubscribeInbox(ctx context.Context, sub *stream.Subscriber) error {
	inbox := chat.InboxName(sub.User())
	var last uint64
	if _, err := s.router.Read(ctx, s.router.PartitionOf(inbox), false, func(r state.Reader) error {
		rm, _, err := chat.GetRoom(r, inbox) // none yet: from 0
		last = rm.LastSeq
		return err
	}); err != nil {
		return err
	}
	s.hub.Subscribe(sub, inbox, last)
	return nil
}

// Typing implements api.StreamService: a typing frame the Hub admits goes to
// the room's subscribers here and on every other node.
func (s streamService) Typing(sub *stream.Subscriber, room string) {
	name, err := chat.CanonicalRoom(room)
	if err != nil {
		return
	}
	if frame := s.hub.Typing(sub, name); frame != nil {
		s.hub.SendRoom(name, frame)
		if s.typing != nil {
			s.typing(name, frame)
		}
	}
}

// Unsubscribe implements api.StreamService.
func (s streamService) Unsubscribe(sub *stream.Subscriber, room string) {
	if name := strings.ToLower(room); !stream.IsInbox(name) {
		s.hub.Unsubscribe(sub, name)
	}
}

// streamStats returns the Hub's counters for /metrics.
func (n *Node) streamStats() metrics.StreamStats {
	st := n.feeds.Hub().Stats()
	return metrics.StreamStats{Subscribers: st.Subscribers, Delivered: st.Delivered, SlowConsumers: st.SlowConsumers}
}

// streamOrigins are the origins browser pages may open streams from, besides
// the node's own host: every node's advertised HTTP address, the public URL
// and --allowed-origin.
func (n *Node) streamOrigins() []string {
	var out []string
	if m := n.Map(); m != nil {
		for _, nd := range m.Nodes {
			if nd.HTTPAddr != "" {
				out = append(out, nd.HTTPAddr)
			}
		}
	}
	if n.cfg.PublicURL != "" {
		out = append(out, n.cfg.PublicURL)
	}
	return append(out, n.cfg.AllowedOrigins...)
}

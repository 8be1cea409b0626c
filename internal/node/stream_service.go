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

// Unsubscribe implements api.StreamService.
func (s streamService) Unsubscribe(sub *stream.Subscriber, room string) {
	s.hub.Unsubscribe(sub, strings.ToLower(room))
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

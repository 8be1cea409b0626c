package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/partition"
)

// methodTyping carries a typing frame to the other nodes, whose subscribers
// of the room get it: typingRequest -> nothing.
const methodTyping = "stream.typing"

// typingWait bounds one typing frame's delivery to another node.
const typingWait = 2 * time.Second

// typingRequest is the body of a stream.typing call.
type typingRequest struct {
	Room  string `json:"room"`
	Frame []byte `json:"frame"`
}

// broadcastTyping sends a typing frame of room to every other node, in the
// background and without retries: typing frames are advisory, a lost one is
// replaced by the next within a second.
func (n *Node) broadcastTyping(room string, frame []byte) {
	m := n.Map()
	if m == nil {
		return
	}
	body, _ := json.Marshal(typingRequest{Room: room, Frame: frame})
	for _, nd := range m.Nodes {
		if nd.ID == n.cfg.ID {
			continue
		}
		addr := nd.Addr
		n.goBackground(func() {
			ctx, cancel := context.WithTimeout(n.ctx, typingWait)
			defer cancel()
			var rep partition.Reply
			_ = n.call(ctx, addr, methodTyping, body, &rep)
		})
	}
}

// callTyping hands a typing frame from another node to this node's
// subscribers of the room.
func (n *Node) callTyping(_ context.Context, _ string, body []byte) (partition.Reply, error) {
	var req typingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad typing request: %w", err)
	}
	n.feeds.SendRoom(req.Room, req.Frame)
	return partition.Reply{}, nil
}

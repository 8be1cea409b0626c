package node

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/webhook"
)

// webhookInterval is how often the leaders of partitions look for outgoing
// webhook deliveries that are due. It bounds the delay of a first attempt
// and adds to each retry's backoff.
const webhookInterval = 250 * time.Millisecond

// newWebhookGuard builds the guard of outgoing webhooks from
// --webhook-allow-cidr: no private address but those, and never this
// cluster's own listeners.
func (n *Node) newWebhookGuard() (*webhook.Guard, error) {
	allow, err := webhook.ParseCIDRs(n.cfg.WebhookAllowCIDRs)
	if err != nil {
		return nil, fmt.Errorf("--webhook-allow-cidr: %w", err)
	}
	return webhook.NewGuard(allow, n.ownAddrs), nil
}

// ownAddrs are the addresses the cluster's nodes listen on: every member's
// HTTP, internal and gossip address and links listener, and this node's
// own listeners (pprof's too).
func (n *Node) ownAddrs() []string {
	out := []string{n.cfg.HTTPAddr, n.self()}
	if n.httpLn != nil {
		out = append(out, n.httpLn.Addr().String())
	}
	if n.cfg.PprofAddr != "" {
		out = append(out, n.cfg.PprofAddr)
	}
	if m := n.Map(); m != nil {
		for _, nd := range m.Nodes {
			out = append(out, nd.Addr, nd.HTTPAddr, gossipAddrOf(nd))
		}
	}
	return append(out, n.linkSelfRoots()...) // the links listeners
}

// startWebhooks delivers the outgoing webhooks of the partitions this node
// leads, until the node stops; the attempts in flight then end with it.
func (n *Node) startWebhooks(rooms *chat.Service, guard *webhook.Guard) {
	d := webhook.NewDispatcher(rooms, guard, webhook.Config{Log: n.log})
	n.goBackground(func() {
		defer d.Wait()
		n.leaderLoop(webhookInterval, "outgoing webhook delivery", d.Dispatch)
	})
}

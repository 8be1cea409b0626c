package node

import (
	"encoding/json"
	"sync"

	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/storage"
)

// A node learns what protocol its peers speak from gossip, and a node that
// has just started knows nothing of a peer that gossip has not reported yet,
// or of a peer that is down: it reports nothing at all. Counted as protocol
// 1 (compat.ClusterProtocol), one such peer turned off, through the node
// that restarted, every feature that needs the whole cluster at a newer
// protocol (API tokens, searches, acks on receive, moderation, checked
// idempotency keys) until the peer came back. A node that had not
// restarted kept the dead peer's last gossip, and served them.
//
// So a node remembers, durably, the protocol gossip last reported of each
// node of the map, with the incarnation the map gave that node then, and
// memberBuild answers with it for a node gossip does not know (of the same
// incarnation: a node rebuilt under the same id is a new node). A node
// gossip knows is taken at its word, so a peer started on an older build
// counts as what it now runs as soon as gossip reports it, as before.

// peerProtocolsBlob names the node blob of the protocols seen of each peer.
const peerProtocolsBlob = "peer-protocols"

// peerProtocol is what a node remembers of one peer.
type peerProtocol struct {
	Incarnation string `json:"incarnation"`
	Protocol    int    `json:"protocol"`
}

// peerProtocols remembers the protocol gossip last reported of each node of
// the map. It is safe for concurrent use.
type peerProtocols struct {
	mu     sync.Mutex
	db     *storage.DB
	loaded bool
	peers  map[string]peerProtocol
}

// observe records what gossip (member: Membership.Member) reports of the
// map's nodes now, durably when it changed anything, and forgets nodes the
// map no longer lists.
func (p *peerProtocols) observe(m *placement.Map, member func(string) (membership.Member, bool), self string) {
	if m == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.load() {
		return
	}
	changed := false
	for id := range p.peers {
		if _, ok := m.Node(id); !ok {
			delete(p.peers, id)
			changed = true
		}
	}
	for _, nd := range m.Nodes {
		if nd.ID == self {
			continue
		}
		mb, ok := member(nd.ID)
		if !ok {
			continue
		}
		if mb.Meta.Protocol <= 0 {
			// A build that does not say (one from before protocols were
			// gossiped) is protocol 1: what it spoke before is forgotten.
			if _, had := p.peers[nd.ID]; had {
				delete(p.peers, nd.ID)
				changed = true
			}
			continue
		}
		seen := peerProtocol{Incarnation: nd.Incarnation, Protocol: mb.Meta.Protocol}
		if p.peers[nd.ID] != seen {
			p.peers[nd.ID] = seen
			changed = true
		}
	}
	if !changed {
		return
	}
	if blob, err := json.Marshal(p.peers); err == nil {
		_ = p.db.SaveNodeBlob(peerProtocolsBlob, blob) // a lost update: a later start counts a peer that is down then as protocol 1, as before
	}
}

// recall returns the protocol last seen of node nd (this incarnation), or 0
// when none was.
func (p *peerProtocols) recall(nd placement.Node) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.load() {
		return 0
	}
	if seen, ok := p.peers[nd.ID]; ok && seen.Incarnation == nd.Incarnation {
		return seen.Protocol
	}
	return 0
}

// load reads the remembered protocols once; false when the store cannot be
// read (then nothing is remembered, and peers gossip does not know count as
// protocol 1).
func (p *peerProtocols) load() bool {
	if p.loaded {
		return true
	}
	if p.db == nil {
		return false
	}
	b, ok, err := p.db.LoadNodeBlob(peerProtocolsBlob)
	if err != nil {
		return false
	}
	p.peers = map[string]peerProtocol{}
	if ok && json.Unmarshal(b, &p.peers) != nil {
		p.peers = map[string]peerProtocol{} // unreadable: start again from what gossip says
	}
	p.loaded = true
	return true
}

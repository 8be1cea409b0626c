package node

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"regexp"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/pki"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/state"
)

// joinRequest is the body of the "join" call.
type joinRequest struct {
	Node placement.Node `json:"node"`
	// TokenID and Secret are the join token's (cluster PKI only; the call
	// runs inside TLS to a node whose CA matches the token's pin).
	TokenID string `json:"token_id,omitempty"`
	Secret  string `json:"secret,omitempty"`
	// CSR asks for the node's certificate and proves it holds the key.
	CSR []byte `json:"csr,omitempty"`
	// Rebuild says the node set a quarantined data directory aside and
	// joins again under its id (--rebuild-quarantined): its old self,
	// once the cluster sees it dead, is removed first (replaceForRebuild).
	Rebuild bool `json:"rebuild,omitempty"`
}

// joinReply is the Result of a successful "join" call.
type joinReply struct {
	// Result is the metadata command's result: the map and the node's
	// metadata replica.
	Result     placement.Result `json:"result"`
	Cert       []byte           `json:"cert,omitempty"`
	CA         []byte           `json:"ca,omitempty"`
	GossipKeys [][]byte         `json:"gossip_keys,omitempty"`
}

// errJoinRefused marks a join the cluster refused for good (a bad token, a
// taken id): retrying cannot help.
var errJoinRefused = errors.New("join refused")

// joinRequest builds the join request and, with the cluster's own PKI, the
// node's new key.
func (n *Node) joinRequest(rec *nodeRecord) (joinRequest, *ecdsa.PrivateKey, error) {
	req := joinRequest{Node: *n.nodeInfo(rec), Rebuild: n.rebuilding}
	if !n.clusterPKI() {
		return req, nil, nil
	}
	key, err := pki.NewKey()
	if err != nil {
		return req, nil, err
	}
	if req.CSR, err = pki.CSR(key, n.cfg.ID); err != nil {
		return req, nil, err
	}
	req.TokenID, req.Secret = n.joinTok.ID, n.joinTok.Secret
	return req, key, nil
}

// callJoin sends the join call on a connection of its own: the node gets
// its certificate from the answer, and no pooled connection may keep the
// credentials it had before.
func (n *Node) callJoin(ctx context.Context, addr string, body []byte) (partition.Reply, error) {
	var rep partition.Reply
	b, err := n.tr.CallOnce(ctx, addr, methodJoin, body)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("bad reply to join from %s: %w", addr, err)
	}
	return rep, nil
}

// joined takes a join answer: it saves the node's record (with its new
// credentials) and opens its metadata replica.
func (n *Node) joined(ctx context.Context, rec *nodeRecord, key *ecdsa.PrivateKey, rep partition.Reply, addr string) error {
	if err := rep.Err(placement.MetaGroup); err != nil {
		if errs.Is(err, errs.Forbidden) || errs.Is(err, errs.Conflict) || errs.Is(err, errs.Invalid) {
			return fmt.Errorf("%w by %s: %s", errJoinRefused, addr, rep.Message)
		}
		return err
	}
	var jr joinReply
	if err := json.Unmarshal(rep.Result, &jr); err != nil {
		return fmt.Errorf("bad join answer from %s: %w", addr, err)
	}
	res := jr.Result
	switch {
	case res.Err() != nil:
		return fmt.Errorf("%w by %s: %s", errJoinRefused, addr, res.Error)
	case res.Map == nil:
		return errors.New("join answer without cluster map")
	}
	rec.ClusterID, rec.MetaReplica, rec.JoinMap = res.Map.ClusterID, res.Replica, res.Map
	rec.GossipKeys = jr.GossipKeys
	if key != nil {
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("encode node key: %w", err)
		}
		id, err := pki.NewIdentity(keyDER, jr.Cert, jr.CA)
		if err != nil {
			return fmt.Errorf("credentials from %s: %w", addr, err)
		}
		if id.NodeID != n.cfg.ID || id.ClusterID != res.Map.ClusterID || pki.Pin(id.CA) != n.joinTok.Pin {
			return fmt.Errorf("%w: %s issued a certificate for node %q of cluster %q", errJoinRefused, addr, id.NodeID, id.ClusterID)
		}
		rec.Key, rec.Cert, rec.CA = keyDER, jr.Cert, jr.CA
		if err := n.saveRecord(rec); err != nil {
			return err
		}
		n.ident.Store(id)
	} else if err := n.saveRecord(rec); err != nil {
		return err
	}
	n.setMap(res.Map)
	n.log.Info("joined cluster", "cluster", rec.ClusterID, "via", addr)
	return n.engine.OpenGroup(ctx, placement.MetaGroup, rec.MetaReplica, nil)
}

// joinSecrets is what the join handler reads from its metadata replica.
type joinSecrets struct {
	ca        placement.CASecret
	hasCA     bool
	token     placement.JoinToken
	hasToken  bool
	oldCert   []byte
	gossip    [][]byte
	clusterID string
	existing  *placement.Node
}

// nodeIDRE is the node id rule of config.Validate.
var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// callJoinRequest answers a join call (handleJoin).
func (n *Node) callJoinRequest(ctx context.Context, from string, body []byte) (partition.Reply, error) {
	return n.handleJoin(ctx, from, body), nil
}

// handleJoin answers a join call from a candidate (from "", no
// certificate) or, in a cluster without its own CA, from any node.
func (n *Node) handleJoin(ctx context.Context, from string, body []byte) partition.Reply {
	var req joinRequest
	if err := json.Unmarshal(body, &req); err != nil || !nodeIDRE.MatchString(req.Node.ID) || req.Node.Addr == "" {
		return n.refuseJoin(req.Node.ID, from, errs.Invalid, "a join names the node (id of letters, digits, '_', '.', '-') and its address")
	}
	var sec joinSecrets
	_, fnErr, err := n.router.ReadLocal(ctx, placement.MetaGroup, true, func(r state.Reader) error { return sec.load(r, req) })
	if err = errors.Join(err, fnErr); err != nil {
		return partition.ReplyOf(nil, errs.Wrap(errs.Unavailable, err, "cannot read the cluster map"))
	}
	if !sec.hasCA {
		if sec.existing != nil && req.Rebuild && sec.existing.Incarnation != req.Node.Incarnation {
			if err := n.replaceForRebuild(ctx, req.Node.ID, from); err != nil {
				return partition.ReplyOf(nil, err)
			}
		}
		return n.proposeJoin(ctx, req, nil, sec)
	}
	if from != "" {
		return n.refuseJoin(req.Node.ID, from, errs.Conflict, "node "+from+" is a member already: a member never joins again")
	}
	now := time.Now()
	if !sec.hasToken || sec.token.ExpiresMs != 0 && now.UnixMilli() >= sec.token.ExpiresMs || !pki.SecretMatches(req.Secret, sec.token.Hash) {
		return n.refuseJoin(req.Node.ID, from, errs.Forbidden, "join token refused: unknown, revoked or expired (parley cluster token list)")
	}
	pub, cn, err := pki.ParseCSR(req.CSR)
	if err != nil || cn != req.Node.ID {
		return n.refuseJoin(req.Node.ID, from, errs.Invalid, "the certificate request must be signed and name the joining node")
	}
	if sec.existing != nil {
		// The same join again (an answer that was lost): same incarnation,
		// same key. Anything else claiming the id is refused.
		if sec.existing.Incarnation == req.Node.Incarnation && pki.SameKey(sec.oldCert, pub) {
			return n.proposeJoin(ctx, req, sec.oldCert, sec)
		}
		if !req.Rebuild {
			return n.refuseJoin(req.Node.ID, from, errs.Conflict, placement.ReasonNodeIDTaken)
		}
		if err := n.replaceForRebuild(ctx, req.Node.ID, from); err != nil {
			return partition.ReplyOf(nil, err)
		}
	}
	ca, err := pki.ParseCA(sec.ca.Cert, sec.ca.Key)
	if err != nil {
		return partition.ReplyOf(nil, errs.Wrap(errs.Internal, err, "cluster CA"))
	}
	cert, err := ca.Issue(sec.clusterID, req.Node.ID, pub, now)
	if err != nil {
		return partition.ReplyOf(nil, errs.Wrap(errs.Internal, err, "issue certificate"))
	}
	return n.proposeJoin(ctx, req, cert, sec)
}

// load reads what a join needs in one snapshot of the metadata state.
func (s *joinSecrets) load(r state.Reader, req joinRequest) error {
	m, ok, err := placement.LoadMap(r)
	if err != nil || !ok {
		return errors.Join(err, errors.New("cluster map not there yet"))
	}
	s.clusterID = m.ClusterID
	if nd, ok := m.Node(req.Node.ID); ok {
		cp := *nd
		s.existing = &cp
	}
	if s.gossip, err = placement.LoadGossipKeys(r); err != nil {
		return err
	}
	if s.ca, s.hasCA, err = placement.LoadCA(r); err != nil || !s.hasCA {
		return err
	}
	if req.TokenID != "" {
		if s.token, s.hasToken, err = placement.LoadToken(r, req.TokenID); err != nil {
			return err
		}
	}
	s.oldCert, _, err = placement.LoadNodeCert(r, req.Node.ID)
	return err
}

// proposeJoin adds the node to the map (with its certificate, if any) and
// builds the answer.
func (n *Node) proposeJoin(ctx context.Context, req joinRequest, cert []byte, sec joinSecrets) partition.Reply {
	nd := req.Node
	nd.CertFP = ""
	if cert != nil {
		nd.CertFP = pki.Fingerprint(cert)
	}
	cmd := placement.AddNode{Node: nd, Cert: cert}
	out, err := n.router.Propose(ctx, placement.MetaGroup, "", placement.Encode(cmd))
	if err != nil {
		return partition.ReplyOf(nil, err)
	}
	res, err := placement.DecodeResult(out)
	if err != nil {
		return partition.ReplyOf(nil, err)
	}
	if res.Err() != nil {
		return n.refuseJoin(nd.ID, "", errs.Conflict, res.Error)
	}
	b, _ := json.Marshal(joinReply{Result: res, Cert: cert, CA: sec.ca.Cert, GossipKeys: sec.gossip})
	n.audit.Record(audit.Event{Kind: audit.KindJoin, Actor: nd.ID, Target: nd.ID, Detail: "joined from " + nd.Addr})
	return partition.Reply{Result: b}
}

// refuseJoin audits a refused join and answers it.
func (n *Node) refuseJoin(node, from string, code errs.Code, why string) partition.Reply {
	n.audit.Record(audit.Event{Kind: audit.KindJoin, Outcome: audit.Refused, Actor: from, Target: node, Detail: why})
	return partition.Reply{Code: code, Message: why}
}

// replaceForRebuild removes the old member id before it joins again with a
// rebuilt data directory (joinRequest.Rebuild), as an operator's parley
// cluster remove would: only once this node sees it dead or gone, so a
// rebuild never evicts a member that still serves. Until then it answers
// Unavailable, which the joining node retries.
func (n *Node) replaceForRebuild(ctx context.Context, id, from string) error {
	switch st := n.MemberState(id); st {
	case "dead", "left", "unknown":
	default:
		return errs.New(errs.Unavailable, "node %s joins again with a rebuilt data dir, but its old self is %s here: waiting until the cluster sees it dead", id, cmp.Or(st, "not yet known"))
	}
	if err := n.RemoveNode(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	n.audit.Record(audit.Event{Kind: audit.KindJoin, Actor: from, Target: id, Detail: "removed its old self to join again with a rebuilt data dir (--rebuild-quarantined)"})
	return nil
}

package faults_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/pki"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
	"github.com/parley-chat/parley/internal/transport"
)

// internalMethods are the calls a member makes of another, each tried by
// the attackers below.
var internalMethods = []string{"propose", "get", "scan", "join", "transfer", "status", "stats", "checksum", "lag", "events", "stream.tail"}

// attackerHandler answers nothing: the attacker only calls.
type attackerHandler struct{}

func (attackerHandler) HandleRaft(string, []transport.GroupMessage) {}
func (attackerHandler) HandleSnapshot(context.Context, string, transport.GroupMessage, io.Reader) error {
	return nil
}
func (attackerHandler) HandleCall(context.Context, string, string, []byte) ([]byte, error) {
	return nil, nil
}

// newAttacker starts a transport of the project's own code claiming node
// id claim, with the given TLS configuration (nil: plaintext).
func newAttacker(t *testing.T, claim string, tc *tls.Config, identify func(tls.ConnectionState) (string, bool), clusterID string) *transport.Transport {
	t.Helper()
	tr, err := transport.New(transport.Config{
		ListenAddr: "127.0.0.1:0", NodeID: claim, TLS: tc, Identify: identify,
		ClusterID: func() string { return clusterID },
	}, attackerHandler{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// attackBody is a request body an attacker sends with a method: a read of
// every partition's state, a forged admin proposal, a join.
func attackBody(method string) []byte {
	switch method {
	case "propose":
		cmd := placement.Encode(placement.AddNode{Node: placement.Node{ID: "rogue", Incarnation: "x", Addr: "127.0.0.1:1"}})
		b, _ := json.Marshal(map[string]any{"g": 0, "id": []byte("forged-1"), "cmd": cmd})
		return b
	case "get", "scan":
		b, _ := json.Marshal(map[string]any{"g": 1, "k": []byte("")})
		return b
	case "join":
		b, _ := json.Marshal(map[string]any{"node": placement.Node{ID: "rogue", Incarnation: "x", Addr: "127.0.0.1:1"}})
		return b
	}
	return []byte("{}")
}

// callsAllFail sends every internal call from tr to addr and fails the test
// for any that is answered with anything but a refusal.
func callsAllFail(t *testing.T, tr *transport.Transport, addr string, who string) {
	t.Helper()
	for _, m := range internalMethods {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		b, err := tr.Call(ctx, addr, m, attackBody(m))
		cancel()
		if err == nil && !refusedReply(b) {
			t.Errorf("%s: %s answered: %.200s", who, m, b)
		}
	}
	msg := transport.GroupMessage{Group: 1, Msg: raftpb.Message{Type: raftpb.MsgSnap, Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 1 << 40, Term: 1 << 30}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := tr.SendSnapshot(ctx, addr, msg, func(w io.Writer) error { _, err := w.Write([]byte("forged")); return err }); err == nil {
		t.Errorf("%s: a snapshot was accepted", who)
	}
	tr.SendRaft(addr, []transport.GroupMessage{{Group: 1, Msg: raftpb.Message{Type: raftpb.MsgHeartbeat, To: 1, From: 99, Term: 1 << 30}}})
}

// refusedReply reports whether a call's answer is a refusal (an error code
// of forbidden, invalid or unauthorized in the node's reply envelope).
func refusedReply(b []byte) bool {
	var rep struct {
		Code string `json:"code"`
	}
	return json.Unmarshal(b, &rep) == nil && (rep.Code == "forbidden" || rep.Code == "invalid" || rep.Code == "unauthorized")
}

// refusals counts the audit events of kind on every node of c.
func refusals(c *testcluster.Cluster, kind string) int {
	n := 0
	for i := range c.Len() {
		if nd := c.Node(i); nd != nil {
			for _, e := range nd.Audit().List() {
				if e.Kind == kind && e.Outcome == audit.Refused {
					n++
				}
			}
		}
	}
	return n
}

// An outsider who reaches the cluster port with the project's own transport
// gets nothing: without TLS, with a certificate of another CA, or with no
// certificate at all, every internal call, Raft message and snapshot is
// refused and audited, and the map is unchanged.
func TestSecurity_OutsiderIsRefusedEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 2, NoSync: true})
	mustPut(t, c.Client(0), "secret-key", "secret-value", client.PutOptions{})
	before := c.Node(0).Map()
	target := c.Node(c.LeaderOf(0)).ClusterAddr() // where a forged proposal would be applied
	clusterID := before.ClusterID

	plain := newAttacker(t, "n3", nil, nil, clusterID)
	callsAllFail(t, plain, target, "plaintext attacker")

	otherCA, err := pki.NewCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	forged := forgedIdentity(t, otherCA, clusterID, "n3")
	foreign := newAttacker(t, "n3", pki.ClusterTLS(pki.Source{Identity: func() *pki.Identity { return forged }}), pki.PeerNode, clusterID)
	callsAllFail(t, foreign, target, "attacker with another CA's certificate")

	// No certificate, but the real CA pinned (as a joiner with a stolen
	// pin but no token has): TLS succeeds, everything but join is refused,
	// and a join without a valid token too.
	pin := tokPin(t, c)
	candidate := newAttacker(t, "rogue", pki.ClusterTLS(pki.Source{Identity: func() *pki.Identity { return nil }, Pin: func() string { return pin }}), pki.PeerNode, clusterID)
	callsAllFail(t, candidate, target, "candidate without a token")

	poll.Until(t, 10*time.Second, "refusals audited", func() error {
		return check(refusals(c, audit.KindCallRefused) >= 3 && refusals(c, audit.KindJoin) >= 1, "refusals audited")
	})
	if after := c.Node(1).Map(); !reflect.DeepEqual(before.Nodes, after.Nodes) {
		t.Fatalf("the map's nodes changed:\n%+v\n%+v", before.Nodes, after.Nodes)
	}
	assertNodeNotListed(t, c.Client(0), "rogue")
	if v, _ := mustGet(t, c.Client(2), "secret-key", client.GetOptions{}); v != "secret-value" {
		t.Fatalf("secret-key = %q", v)
	}
}

// A stranger who knows the cluster id (every signed-in user sees it) but not
// the gossip key is not let into gossip: no member ever lists it, and the
// refusal is audited.
func TestSecurity_GossipNeedsTheClusterKey(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 2, NoSync: true})
	m := c.Node(0).Map()
	for _, keys := range [][][]byte{nil, {[]byte("0123456789abcdef0123456789abcdef")}} {
		ml, err := membership.New(membership.Config{
			NodeID: "stranger", ClusterID: m.ClusterID, BindAddr: testcluster.FreeAddr(t),
			Meta: membership.Meta{ClusterAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}, Keys: keys,
			ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 50 * time.Millisecond, TCPTimeout: time.Second,
			Join: []string{m.Nodes[0].GossipAddr, m.Nodes[1].GossipAddr},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = ml.Join(ctx)
		cancel()
		time.Sleep(time.Second) // gossip rounds during which a member could learn of it
		for _, mb := range ml.Members() {
			if mb.ID != "stranger" && mb.State == membership.Alive {
				t.Errorf("the stranger (keys %d) sees member %s alive", len(keys), mb.ID)
			}
		}
		_ = ml.Close()
	}
	for i := range c.Len() {
		if _, ok := c.Node(i).Gossip().Member("stranger"); ok {
			t.Fatalf("node %d lists the stranger as a member", i)
		}
	}
	poll.Until(t, 10*time.Second, "gossip refusal audited", func() error { return check(refusals(c, audit.KindGossipRefused) >= 1, "gossip refusal audited") })
	assertNodeNotListed(t, c.Client(0), "stranger")
}

// A node that joined legitimately cannot speak for another: a handshake
// claiming another id, a join claiming it, a proposal rewriting it and a
// read of the cluster's secrets are all refused and audited, and the
// victim's entry in the map is unchanged.
func TestSecurity_MemberCannotClaimAnotherID(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 2, NoSync: true})
	target := c.Node(0).ClusterAddr()
	clusterID := c.Node(0).Map().ClusterID
	tok, err := pki.ParseToken(c.JoinToken())
	if err != nil {
		t.Fatal(err)
	}
	// Join legitimately as "evil", by hand, with the token.
	joiner := newAttacker(t, "evil", pki.ClusterTLS(pki.Source{Identity: func() *pki.Identity { return nil }, Pin: func() string { return tok.Pin }}), pki.PeerNode, "")
	key, _ := pki.NewKey()
	rep := joinAs(t, joiner, target, "evil", key, tok)
	if rep.Code != "" {
		t.Fatalf("the legitimate join was refused: %s %s", rep.Code, rep.Msg)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	evil, err := pki.NewIdentity(keyDER, rep.Result.Cert, rep.Result.CA)
	if err != nil {
		t.Fatal(err)
	}
	victim, _ := c.Node(0).Map().Node("n3")
	before := *victim
	src := pki.Source{Identity: func() *pki.Identity { return evil }}

	// 1. Handshakes claiming n3 with evil's certificate: everything refused.
	claimer := newAttacker(t, "n3", pki.ClusterTLS(src), pki.PeerNode, clusterID)
	callsAllFail(t, claimer, target, "evil claiming n3")

	// 2. As itself: join claiming n3, rewrite n3, add n3 again, read secrets.
	member := newAttacker(t, "evil", pki.ClusterTLS(src), pki.PeerNode, clusterID)
	if r := joinAs(t, member, target, "n3", key, tok); r.Code == "" {
		t.Error("a member's join claiming n3 was accepted")
	}
	evilCert := rep.Result.Cert
	update := placement.Node{ID: "n3", Incarnation: before.Incarnation, Addr: joiner.Addr()}
	add := placement.Node{ID: "n3", Incarnation: "new", Addr: joiner.Addr(), CertFP: pki.Fingerprint(evilCert)}
	for name, cmd := range map[string][]byte{
		"update n3": placement.Encode(placement.UpdateNode{Node: update}),
		"add n3":    placement.Encode(placement.AddNode{Node: add, Cert: evilCert}),
		// The JSON form older versions proposed, still applied from logs.
		"update n3 (legacy)": legacyMetaCommand(map[string]any{"op": "update_node", "node": update}),
		"add n3 (legacy)":    legacyMetaCommand(map[string]any{"op": "add_node", "node": add, "node_cert": evilCert}),
	} {
		b, _ := json.Marshal(map[string]any{"g": 0, "id": []byte("forged-" + name), "cmd": cmd})
		out, err := member.Call(context.Background(), c.Node(c.LeaderOf(0)).ClusterAddr(), "propose", b)
		if err != nil || refusedReply(out) {
			continue
		}
		// Proposed: the state machine must refuse it, a binary join for
		// the id taken (a legacy command's result has no code).
		res := metaResult(out)
		if res.Err() == nil || !strings.HasSuffix(name, "(legacy)") && res.Code != placement.CodeNodeIDTaken {
			t.Errorf("%s: %.300s", name, out)
		}
	}
	for _, body := range []map[string]any{{"g": 0, "k": []byte("secret/ca")}, {"g": 0, "k": []byte("")}} {
		b, _ := json.Marshal(body)
		method := "get"
		if len(body["k"].([]byte)) == 0 {
			method = "scan"
		}
		out, err := member.Call(context.Background(), target, method, b)
		if err == nil && !refusedReply(out) {
			t.Errorf("%s of the metadata secrets answered: %.200s", method, out)
		}
	}
	poll.Until(t, 10*time.Second, "refusals audited", func() error { return check(refusals(c, audit.KindCallRefused) >= 3, "refusals audited") })
	time.Sleep(200 * time.Millisecond)
	for i := range c.Len() {
		after, ok := c.Node(i).Map().Node("n3")
		if !ok || *after != before {
			t.Fatalf("node %d: n3 is %+v, was %+v", i, after, before)
		}
	}
}

// joinReply mirrors the node's answer to a join call.
type joinReplyWire struct {
	Code   string `json:"code"`
	Msg    string `json:"msg"`
	Result struct {
		Cert []byte `json:"cert"`
		CA   []byte `json:"ca"`
	} `json:"-"`
	R []byte `json:"r"`
}

// joinAs sends a join call for node id with key's certificate request.
func joinAs(t *testing.T, tr *transport.Transport, addr, id string, key *ecdsa.PrivateKey, tok pki.Token) joinReplyWire {
	t.Helper()
	csr, err := pki.CSR(key, id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"node":     placement.Node{ID: id, Incarnation: "inc-" + id, Addr: tr.Addr()},
		"token_id": tok.ID, "secret": tok.Secret, "csr": csr,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := tr.CallOnce(ctx, addr, "join", body)
	if err != nil {
		return joinReplyWire{Code: "error", Msg: err.Error()}
	}
	var rep joinReplyWire
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.R) > 0 {
		if err := json.Unmarshal(rep.R, &rep.Result); err != nil {
			t.Fatal(err)
		}
	}
	return rep
}

// forgedIdentity makes credentials for node id signed by ca.
func forgedIdentity(t *testing.T, ca *pki.CA, clusterID, id string) *pki.Identity {
	t.Helper()
	key, _ := pki.NewKey()
	cert, err := ca.Issue(clusterID, id, key.Public(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	ident, err := pki.NewIdentity(keyDER, cert, ca.CertDER)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

// check turns a condition into an error naming what did not hold.
func check(ok bool, what string) error {
	if ok {
		return nil
	}
	return errors.New(what + " not yet")
}

// tokPin returns the CA pin of the cluster's join token.
func tokPin(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	tok, err := pki.ParseToken(c.JoinToken())
	if err != nil {
		t.Fatal(err)
	}
	return tok.Pin
}

// metaResult returns the result of a metadata command in a propose call's
// answer; an answer without one counts as applied.
func metaResult(b []byte) placement.Result {
	var rep struct {
		R []byte `json:"r"`
	}
	if json.Unmarshal(b, &rep) != nil {
		return placement.Result{}
	}
	res, _ := placement.DecodeResult(rep.R)
	return res
}

// legacyMetaCommand encodes a metadata command in the JSON form of the
// versions before the binary codec.
func legacyMetaCommand(fields map[string]any) []byte {
	b, _ := json.Marshal(fields)
	return append([]byte{placement.Tag}, b...)
}

// Removing a node revokes its certificate: the connections it had are
// closed, new ones refused, and every node audits the revocation.
func TestSecurity_RemovedNodeIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 4, Partitions: 2, NoSync: true})
	admin := c.Client(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := admin.DrainNode(ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 60*time.Second, "n4 drained and removed", func() error { return admin.RemoveNode(ctx, "n4") })
	poll.Until(t, 10*time.Second, "the revocation audited on every node", func() error {
		for i := range 3 {
			found := false
			for _, e := range c.Node(i).Audit().List() {
				found = found || e.Kind == audit.KindCertRevoked && e.Target == "n4"
			}
			if !found {
				return fmt.Errorf("n%d has not audited it", i+1)
			}
		}
		return nil
	})
	n4 := c.Node(3).Transport()
	for i := range 3 {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := n4.Call(cctx, c.Node(i).ClusterAddr(), "status", []byte("{}"))
		ccancel()
		if err == nil {
			t.Fatalf("the removed node's call to n%d was answered", i+1)
		}
	}
}

// Rotating the join tokens puts a new gossip key in use on every node,
// gossip goes on (nobody is declared dead), and only the new token is left.
func TestSecurity_RotationChangesGossipKeyEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 2, NoSync: true})
	before := c.Node(0).Gossip().PrimaryKey()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh, err := c.Client(1).RotateJoinTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// No node seals its gossip with the new key while another cannot read
	// it yet: it would be unreadable to that one, whose probes then fail.
	poll.Until(t, 15*time.Second, "every node on the new gossip key", func() error {
		for i := range 3 {
			if keys, _ := placement.LoadGossipKeys(c.Node(i).DB().State(placement.MetaGroup)); len(keys) > 0 &&
				bytes.Equal(c.Node(i).Gossip().PrimaryKey(), keys[0]) {
				for j := range 3 {
					if !slices.ContainsFunc(c.Node(j).Gossip().Keys(), func(k []byte) bool { return bytes.Equal(k, keys[0]) }) {
						t.Fatalf("n%d gossips with the new key while n%d cannot read it yet", i+1, j+1)
					}
				}
			}
		}
		for i := range 3 {
			keys, err := placement.LoadGossipKeys(c.Node(i).DB().State(placement.MetaGroup))
			if err != nil || len(keys) != 2 || !bytes.Equal(keys[1], before) {
				return fmt.Errorf("n%d keeps %d keys (%v)", i+1, len(keys), err)
			}
			if !bytes.Equal(c.Node(i).Gossip().PrimaryKey(), keys[0]) {
				return fmt.Errorf("n%d still gossips with the old key", i+1)
			}
		}
		return nil
	})
	time.Sleep(2 * time.Second) // gossip rounds with the new key
	for i := range 3 {
		for _, mb := range c.Node(i).Gossip().Members() {
			if mb.State != membership.Alive {
				t.Fatalf("after the rotation n%d sees %s %s", i+1, mb.ID, mb.State)
			}
		}
	}
	toks, err := c.Client(2).JoinTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 1 || toks[0].ID != fresh.ID || toks[0].Token != "" {
		t.Fatalf("tokens after rotation: %+v", toks)
	}
}

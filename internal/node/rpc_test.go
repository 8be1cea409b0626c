package node

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/partition"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/search"
)

func mustNode(t *testing.T) *Node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	n, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every internal method, the request path's and the node's, is in the one
// table.
func TestCallTable_EveryMethod(t *testing.T) {
	n := mustNode(t)
	methods := []string{
		partition.MethodPropose, partition.MethodProposeBin, partition.MethodGetBin, partition.MethodScanBin, partition.MethodGet, partition.MethodScan, partition.MethodRelease, partition.MethodTail,
		methodJoin, methodStatus, methodEvents, methodTransfer, methodChecksum, methodLag, methodStats, methodAudit, methodLimit,
		methodTyping, methodBoot, search.Method,
	}
	for _, m := range methods {
		if n.calls[m] == nil {
			t.Errorf("no handler for %q", m)
		}
	}
	if len(n.calls) != len(methods) {
		t.Errorf("%d methods in the table, %d listed here", len(n.calls), len(methods))
	}
}

// A caller without a certificate reaches join only; every other method is
// refused and audited, known or not.
func TestHandleCall_CandidateMayOnlyJoin(t *testing.T) {
	n := mustNode(t)
	h := n
	ctx := context.Background()
	for _, m := range []string{partition.MethodPropose, partition.MethodGet, methodStatus, methodAudit, "no-such-method"} {
		if _, err := h.HandleCall(ctx, "", m, nil); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("candidate calling %s: %v, want refused", m, err)
		}
	}
	evs, err := n.Audit().Query(audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 || evs[0].Kind != audit.KindCallRefused {
		t.Errorf("audited %d events (%+v), want 5 refused calls", len(evs), evs)
	}
	// join gets through the rule (and finds the node not started).
	b, err := h.HandleCall(ctx, "", methodJoin, nil)
	var rep partition.Reply
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Code != errs.Unavailable {
		t.Fatalf("candidate calling join: %s, %v; want node starting", b, err)
	}
}

// Another node may not create the cluster or change a third node's
// addresses through a forwarded proposal, in either encoding of the
// propose call; the refusal is audited and proposes nothing.
func TestCallPropose_MetaGuardsInBothEncodings(t *testing.T) {
	n := mustNode(t)
	ctx := context.Background()
	cmds := map[string]placement.Command{
		"create cluster":       placement.CreateCluster{ClusterID: "c", Partitions: 4},
		"another node's addrs": placement.UpdateNode{Node: placement.Node{ID: "n3", Addr: "127.0.0.1:1"}},
	}
	for name, c := range cmds {
		req := partition.ProposeRequest{Group: placement.MetaGroup, ID: []byte("id"), Cmd: placement.Encode(c)}
		jsonBody, _ := json.Marshal(req)
		for method, body := range map[string][]byte{
			partition.MethodPropose:    jsonBody,
			partition.MethodProposeBin: partition.AppendProposeRequest(nil, req),
		} {
			rep, err := n.calls[method](ctx, "n2", body)
			if err != nil || rep.Code != errs.Forbidden {
				t.Errorf("%s by %s: %+v, %v; want forbidden", name, method, rep, err)
			}
		}
	}
	evs, err := n.Audit().Query(audit.Filter{})
	if err != nil || len(evs) != 4 {
		t.Fatalf("audited %d events (%v), want 4 refused calls", len(evs), err)
	}
	targets := map[string]int{}
	for _, ev := range evs {
		targets[ev.Target]++
	}
	if targets[partition.MethodPropose] != 2 || targets[partition.MethodProposeBin] != 2 {
		t.Errorf("audited refusals name %v, want each method twice", targets)
	}
	if _, err := n.calls[partition.MethodProposeBin](ctx, "n2", []byte{0x80}); err == nil {
		t.Error("a malformed binary propose request was taken")
	}
}

// Another node may not read the cluster's secrets from this node's replica,
// by get or scan, in either encoding; each refusal is audited under the
// method it came by.
func TestCallRead_SecretsGuardInBothEncodings(t *testing.T) {
	n := mustNode(t)
	ctx := context.Background()
	secret := append(bytes.Clone(placement.SecretPrefix), "join"...)
	get := partition.ReadRequest{Group: placement.MetaGroup, Key: secret}
	scan := partition.ReadRequest{Group: placement.MetaGroup, Key: []byte{0}, Limit: 10}
	jsonBody := func(req partition.ReadRequest) []byte { b, _ := json.Marshal(req); return b }
	calls := map[string][]byte{
		partition.MethodGet:     jsonBody(get),
		partition.MethodGetBin:  partition.AppendReadRequest(nil, get),
		partition.MethodScan:    jsonBody(scan),
		partition.MethodScanBin: partition.AppendReadRequest(nil, scan),
	}
	for method, body := range calls {
		rep, err := n.calls[method](ctx, "n2", body)
		if err != nil || rep.Code != errs.Forbidden {
			t.Errorf("%s of the secrets: %+v, %v; want forbidden", method, rep, err)
		}
	}
	evs, err := n.Audit().Query(audit.Filter{})
	if err != nil || len(evs) != len(calls) {
		t.Fatalf("audited %d events (%v), want %d refused calls", len(evs), err, len(calls))
	}
	targets := map[string]int{}
	for _, ev := range evs {
		targets[ev.Target]++
	}
	for method := range calls {
		if targets[method] != 1 {
			t.Errorf("refusals audited under %v, want one under each method", targets)
			break
		}
	}
}

package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/partition"
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
		partition.MethodPropose, partition.MethodGet, partition.MethodScan, partition.MethodRelease, partition.MethodTail,
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

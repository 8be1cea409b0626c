package node

import (
	"testing"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/compat"
)

// The account service proposes token commands once ClusterProtocol reaches
// account.TokenProtocol: this build must speak it, and a cluster of the
// previous release (MinProtocol) must not.
func TestProtocol_CoversAPITokens(t *testing.T) {
	if compat.Protocol < account.TokenProtocol {
		t.Fatalf("compat.Protocol %d is below account.TokenProtocol %d: token commands would never be proposed", compat.Protocol, account.TokenProtocol)
	}
	if compat.ClusterProtocol([]int{compat.Protocol, compat.MinProtocol}) >= account.TokenProtocol {
		t.Fatalf("a cluster with a node of protocol %d would accept token commands it cannot apply", compat.MinProtocol)
	}
}

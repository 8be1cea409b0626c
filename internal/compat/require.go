package compat

import "github.com/parley-chat/parley/internal/errs"

// Require refuses a command of feature that is new at protocol need while
// some node of the cluster speaks an older protocol (clusterProtocol, the
// node's ClusterProtocol; nil: every node speaks this build's): an older
// replica could not apply it, and its state would part from the others'.
// The refusal is errs.UpgradeInProgress, retryable.
func Require(clusterProtocol func() int, need int, feature string) error {
	if clusterProtocol == nil {
		return nil
	}
	if p := clusterProtocol(); p < need {
		return errs.New(errs.UpgradeInProgress,
			"%s need every node upgraded (the cluster speaks protocol %d, they need %d); retry when the upgrade is done", feature, p, need)
	}
	return nil
}

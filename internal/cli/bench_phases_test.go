package cli

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParsePhases_SumsNodesAndDiffs(t *testing.T) {
	node := func(n int) string {
		return strings.ReplaceAll(`# HELP parley_raft_proposal_phase_seconds x
# TYPE parley_raft_proposal_phase_seconds histogram
parley_raft_proposal_phase_seconds_bucket{phase="total",le="0.001"} 0
parley_raft_proposal_phase_seconds_bucket{phase="total",le="0.002"} N
parley_raft_proposal_phase_seconds_bucket{phase="total",le="+Inf"} N
parley_raft_proposal_phase_seconds_sum{phase="total"} 0.0015
parley_raft_proposal_phase_seconds_count{phase="total"} N
parley_http_requests_total{code="200",route="x"} 5
`, "N", strconv.Itoa(n))
	}
	before := map[string]*phaseHist{}
	if err := parsePhases(strings.NewReader(node(1)), before); err != nil {
		t.Fatal(err)
	}
	after := map[string]*phaseHist{}
	for _, n := range []int{3, 5} { // two nodes
		if err := parsePhases(strings.NewReader(node(n)), after); err != nil {
			t.Fatal(err)
		}
	}
	d := after["total"].since(before["total"])
	if d.count != 7 || math.Abs(d.sum-0.0015) > 1e-12 {
		t.Fatalf("since: count %v sum %v, want 7 and 0.0015", d.count, d.sum)
	}
	if q := d.quantile(0.5); q <= 0.001 || q > 0.002 {
		t.Errorf("p50 = %v, want within the (1 ms, 2 ms] bucket", q)
	}
	params := map[string]string{}
	addPhaseParams(params, before, after)
	if !strings.HasPrefix(params["phase_total"], "mean 0.214,") || !strings.HasPrefix(params["phase_proposals"], "7 ") {
		t.Errorf("params = %v", params)
	}
}

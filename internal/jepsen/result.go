package jepsen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Result is one row of the reliability table: a fault, a workload, what the
// clients did and what the checker found.
type Result struct {
	// Row is the row's name, as scripts/nemesis takes it.
	Row string `json:"row"`
	// Fault and Workload describe the row.
	Fault    string `json:"fault"`
	Workload string `json:"workload"`
	// Nodes is the cluster's size.
	Nodes int `json:"nodes"`
	// Ops counts the operations the clients completed or gave up on.
	Ops int `json:"ops"`
	// Acked counts the writes the cluster acknowledged.
	Acked int `json:"acked"`
	// Unknown counts the writes whose outcome the client never learned.
	Unknown int `json:"unknown"`
	// Lost counts acknowledged writes missing at the end.
	Lost int `json:"lost"`
	// Duplicated counts writes applied (or delivered and acked) twice.
	Duplicated int `json:"duplicated"`
	// Violations counts other broken promises: a revoked token accepted
	// after its window, a flood that starved another user.
	Violations int `json:"violations"`
	// Linearizable is "yes" or "no" for KV, "n/a" for the others.
	Linearizable string `json:"linearizable"`
	// RecoveryMs is the time from healing the fault to the first successful
	// write and read through every node, in milliseconds.
	RecoveryMs int64 `json:"recovery_ms"`
	// Promise is what Parley promises under the fault.
	Promise string `json:"promise"`
	// Detail says more: the mechanism of a fault, what a checker saw.
	Detail string `json:"detail,omitempty"`
	// Command reproduces the row.
	Command string `json:"command"`
	// Pass is the row's verdict.
	Pass bool `json:"pass"`
}

// ResultsEnv names the file (JSON lines) rows are appended to; unset, rows
// are only logged.
const ResultsEnv = "PARLEY_NEMESIS_RESULTS"

var resultsMu sync.Mutex

// Record appends r to the results file named by $PARLEY_NEMESIS_RESULTS,
// when set, and returns the JSON line.
func Record(r Result) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	path := os.Getenv(ResultsEnv)
	if path == "" {
		return string(b), nil
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return string(b), err
	}
	_, err = fmt.Fprintf(f, "%s\n", b)
	return string(b), errors.Join(err, f.Close())
}

// Verdict sets r.Pass: nothing lost or duplicated, a linearizable history
// where one is checked, and a recovery within the test's bound.
func (r *Result) Verdict() {
	r.Pass = r.Lost == 0 && r.Duplicated == 0 && r.Violations == 0 && (r.Linearizable == "yes" || r.Linearizable == "n/a") && r.RecoveryMs >= 0
}

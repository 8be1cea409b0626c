package placement

import (
	"encoding/json"
	"fmt"
)

// Code says why the metadata state machine refused a command. Callers
// compare codes with == or errors.Is, never the Result's text. The values
// are recorded in results (and so in the dedup records of the metadata
// group's state): never renumber one, only add.
type Code uint8

// Refusal codes; CodeOK means the command applied.
const (
	CodeOK Code = 0
	// CodeMalformed: not a metadata command this version decodes.
	CodeMalformed Code = 1
	// CodeNotCreated: the cluster was not created yet.
	CodeNotCreated Code = 2
	// CodeAlreadyCreated: a create of a cluster that exists.
	CodeAlreadyCreated Code = 3
	// CodeInvalid: a field is missing or out of range.
	CodeInvalid Code = 4
	// CodeStaleTerm: decided by a metadata leader a newer one fenced off.
	CodeStaleTerm Code = 5
	// CodeNodeIDTaken: a join claims the id of a member it is not.
	CodeNodeIDTaken Code = 6
	// CodeCertRevoked: a join with the certificate of a removed node.
	CodeCertRevoked Code = 7
	// CodeNoSuchNode, CodeNoSuchGroup, CodeNoSuchReplica: the command names
	// something the map does not have.
	CodeNoSuchNode    Code = 8
	CodeNoSuchGroup   Code = 9
	CodeNoSuchReplica Code = 10
	// CodeNotDrained: a removal of a node neither drained nor dead.
	CodeNotDrained Code = 11
	// CodeTokenExists, CodeNoSuchToken: join token commands.
	CodeTokenExists Code = 12
	CodeNoSuchToken Code = 13
	// CodeNoGossipKey: a key rotation in a cluster that gossips in
	// plaintext.
	CodeNoGossipKey Code = 14
	// CodeUnspecified: a refusal recorded without a code, by a version
	// before codes or for a legacy command (see DESIGN.md).
	CodeUnspecified Code = 15
)

var codeNames = [...]string{
	CodeOK: "ok", CodeMalformed: "malformed", CodeNotCreated: "not_created",
	CodeAlreadyCreated: "already_created", CodeInvalid: "invalid", CodeStaleTerm: "stale_term",
	CodeNodeIDTaken: "node_id_taken", CodeCertRevoked: "cert_revoked", CodeNoSuchNode: "no_such_node",
	CodeNoSuchGroup: "no_such_group", CodeNoSuchReplica: "no_such_replica", CodeNotDrained: "not_drained",
	CodeTokenExists: "token_exists", CodeNoSuchToken: "no_such_token", CodeNoGossipKey: "no_gossip_key",
	CodeUnspecified: "unspecified",
}

// String returns the code's name ("stale_term").
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code_%d", uint8(c))
}

// Error makes a Code an error, so that errors.Is(err, CodeStaleTerm)
// matches a Refusal with that code.
func (c Code) Error() string { return "metadata command refused: " + c.String() }

// Refusal is a command the state machine refused, as an error: Reason is
// for people, Code for programs (errors.Is(err, CodeNoSuchToken)).
type Refusal struct {
	Code   Code
	Reason string
}

func (e *Refusal) Error() string { return e.Reason }

// Unwrap returns the code, for errors.Is.
func (e *Refusal) Unwrap() error { return e.Code }

// ReasonStaleTerm is the reason given for CodeStaleTerm.
const ReasonStaleTerm = "stale term: decided by a deposed metadata leader"

// ReasonNodeIDTaken is the reason given for CodeNodeIDTaken.
const ReasonNodeIDTaken = "node id taken: a member of the cluster has it (a node that lost its data directory must be removed first: parley cluster remove ID)"

// Result is what applying a Command returns.
type Result struct {
	// Replica is the replica id created or found (AddNode: the node's
	// metadata replica).
	Replica uint64 `json:"replica,omitempty"`
	// Code is set when the command was refused; the state is unchanged.
	Code Code `json:"code,omitempty"`
	// Error says why, for people; never compare it.
	Error string `json:"error,omitempty"`
	// Map is the map after the command (AddNode only, for the joining node).
	Map *Map `json:"map,omitempty"`
}

// Err returns nil when the command applied, else a *Refusal. A refusal
// without a code (recorded by an older version) has CodeUnspecified.
func (r Result) Err() error {
	if r.Code == CodeOK && r.Error == "" {
		return nil
	}
	code := r.Code
	if code == CodeOK {
		code = CodeUnspecified
	}
	return &Refusal{Code: code, Reason: r.Error}
}

// refused returns the Result of a command refused with code.
func refused(code Code, format string, args ...any) Result {
	return Result{Code: code, Error: fmt.Sprintf(format, args...)}
}

// DecodeResult parses an Apply result. A refusal without a code (recorded
// by an older version) gets CodeUnspecified.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("placement: bad result: %w", err)
	}
	if r.Code == CodeOK && r.Error != "" {
		r.Code = CodeUnspecified
	}
	return r, nil
}

// Package audit records security-relevant events — refused internal calls,
// joins, node removals, certificate revocations, admin actions, logins and
// session or token revocations — as structured log lines, in a bounded
// per-node ring and, through a writer goroutine that never holds up the
// caller, in the node's own store (the newest Keep events survive a
// restart). GET /api/v1/audit gathers every node's events. An event never
// carries a secret: no password, token, key or hash ever goes into one.
package audit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Outcomes of an Event.
const (
	OK      = "ok"
	Refused = "refused"
	// Failed is an action that was allowed but did not complete (the
	// cluster was unavailable, the target did not exist, ...).
	Failed = "failed"
)

// Event kinds.
const (
	KindCallRefused    = "internal_call_refused" // a connection or call on the cluster port refused
	KindGossipRefused  = "gossip_refused"        // a gossip join or message refused
	KindJoin           = "node_join"             // a node asked to join (Outcome says how it went)
	KindNodeRemoved    = "node_removed"          // a node removed from the map
	KindCertRevoked    = "cert_revoked"          // a node certificate revoked
	KindJoinToken      = "join_token"            // a join token created, rotated or revoked (Detail)
	KindLogin          = "login"                 // a sign-in (Outcome ok or refused)
	KindSessionRevoked = "session_revoked"       // a logout or revocation
	KindAdmin          = "admin_action"          // an admin-only call
	KindRateLimited    = "rate_limited"          // a per-user or per-address limit refused a request
	KindUserCreated    = "user_created"          // the first user (the admin) registered, or an admin created a user
	KindAPIToken       = "api_token"             // a personal API token created or revoked (Detail: which)
)

// Event is one audited occurrence.
type Event struct {
	Time    time.Time `json:"time"`
	Node    string    `json:"node"`
	Kind    string    `json:"kind"`
	Outcome string    `json:"outcome"`
	// Actor is who acted: a user name, a node id, or "" when unknown.
	Actor string `json:"actor,omitempty"`
	// Remote is the address the action came from.
	Remote string `json:"remote,omitempty"`
	// Target is what was acted on (a node id, a user, a route).
	Target string `json:"target,omitempty"`
	// Detail is one line of explanation; never a secret.
	Detail string `json:"detail,omitempty"`
}

// Recorder records events. Implementations are safe for concurrent use and
// never block the caller for long.
type Recorder interface {
	Record(e Event)
}

// Discard is a Recorder that drops every event.
var Discard Recorder = discard{}

type discard struct{}

func (discard) Record(Event) {}

// Capacity is how many recent events a Log keeps.
const Capacity = 1024

// Log is a node's audit log: each event is logged through slog at Warn
// (refusals, failures) or Info and kept in a bounded ring, oldest dropped
// first. Once a Store is attached and Run runs, events are also saved there
// by that writer goroutine, fed through a bounded queue (persist.go).
type Log struct {
	node string
	log  *slog.Logger
	now  func() time.Time

	queue   chan Event    // events waiting for the writer
	dropped atomic.Uint64 // events that found the queue full

	mu    sync.Mutex
	ring  []Event
	next  int
	store Store // set by Attach, cleared when Run ends
}

// NewLog returns a Log for node that writes lines to log (nil: discard).
func NewLog(node string, log *slog.Logger) *Log {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log{node: node, log: log, now: time.Now, queue: make(chan Event, queueSize)}
}

// Record implements Recorder.
func (l *Log) Record(e Event) {
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	if e.Node == "" {
		e.Node = l.node
	}
	if e.Outcome == "" {
		e.Outcome = OK
	}
	e = e.bounded()
	level := slog.LevelInfo
	if e.Outcome != OK {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "audit", "kind", e.Kind, "outcome", e.Outcome,
		"actor", e.Actor, "remote", e.Remote, "target", e.Target, "detail", e.Detail)
	l.mu.Lock()
	if len(l.ring) < Capacity {
		l.ring = append(l.ring, e)
	} else {
		l.ring[l.next] = e
		l.next = (l.next + 1) % Capacity
	}
	l.mu.Unlock()
	select {
	case l.queue <- e:
	default:
		l.dropped.Add(1)
	}
}

// List returns the kept events, oldest first.
func (l *Log) List() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// Package servicetest wires every domain service over in-memory replicators,
// with cheap password hashing and a test clock: the one full stack for tests
// of the layers above the services (the HTTP API, the Go client). It hands
// back services, not a server, so that internal/api's own tests can use it
// and put them into an api.Config as the node does.
package servicetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/webhook"
)

// Partitions is the number of partitions of every replicator.
const Partitions = 4

// Options adjust a Stack. Zero fields take the services' defaults.
type Options struct {
	// Registration is the accounts' registration mode (open).
	Registration account.RegistrationMode
	// Limiter limits the accounts' login and registration attempts (none).
	Limiter account.Limiter
	// SessionTTL is how long a session lasts (account.DefaultSessionTTL).
	SessionTTL time.Duration
	// IsAdmin is the queues' admin check (nobody is admin).
	IsAdmin func(ctx context.Context, user string) (bool, error)
}

// Stack is every domain service, each over its own in-memory replicator.
type Stack struct {
	Accounts *account.Service
	Rooms    *chat.Service
	Queues   *queue.Service
	Links    *link.Service
	KV       *kv.Service
	// KVWatch serves kv watches over KV (polling: the in-memory
	// replicator has no apply notifier).
	KVWatch KVWatch

	// The replicators, to look at the state, fail calls or move the queues'
	// clock (QueueRep is frozen at statetest.Start; Advance it to lapse
	// leases).
	AccountRep, RoomRep, QueueRep, LinkRep, KVRep *statetest.Replicator
	// Clock is the accounts' clock. It starts at the Unix epoch, where the
	// account replicator's leader time starts, so sessions expire on one
	// time line: Advance it past a session's TTL to expire it.
	Clock *statetest.Clock

	writes atomic.Int64
}

// New returns a Stack built with o.
func New(t testing.TB, o Options) *Stack {
	t.Helper()
	s := &Stack{Clock: statetest.NewClock(time.UnixMilli(0))}
	s.AccountRep = statetest.NewReplicator(Partitions, counting{account.StateMachine{}, &s.writes})
	s.RoomRep = statetest.NewReplicator(Partitions, counting{chat.StateMachine{}, &s.writes})
	s.LinkRep = statetest.NewReplicator(Partitions, counting{link.StateMachine{}, &s.writes})
	s.KVRep = statetest.NewReplicator(Partitions, counting{kv.StateMachine{}, &s.writes})
	s.QueueRep = statetest.NewReplicator(Partitions, queue.StateMachine{})
	s.QueueRep.Freeze(statetest.Start)
	s.QueueRep.NotifyOn(queue.TouchedKey)

	hasher := passwordtest.Hasher() // one per stack, as one per node
	var err error
	s.Accounts, err = account.NewService(s.AccountRep, account.Config{
		Registration: o.Registration,
		Limiter:      o.Limiter,
		SessionTTL:   o.SessionTTL,
		Hasher:       hasher,
		Now:          s.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Links, err = link.NewService(s.LinkRep, link.Config{}); err != nil {
		t.Fatal(err)
	}
	// Outgoing webhooks are checked by the node's guard, with no private
	// range allowed: tests give public addresses as IP literals, which
	// need no resolver.
	s.Rooms = chat.NewService(s.RoomRep, chat.Config{Hasher: hasher, CheckHookURL: webhook.NewGuard(nil, nil).CheckURL})
	s.Queues = queue.NewService(s.QueueRep, queue.Config{Now: s.QueueRep.Now, Notifier: s.QueueRep, IsAdmin: o.IsAdmin})
	s.KV = kv.NewService(s.KVRep, kv.Limits{})
	s.KVWatch = KVWatch{KV: s.KV, Rep: s.KVRep}
	return s
}

// Writes returns how many Set and Delete calls the state machines of
// accounts, rooms, links and kv have made: a check that a refused request
// changed nothing.
func (s *Stack) Writes() int64 { return s.writes.Load() }

// counting counts the writes of a state machine.
type counting struct {
	app    state.Applier
	writes *atomic.Int64
}

func (c counting) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	return c.app.Apply(countingWriter{w, c.writes}, meta, cmd)
}

type countingWriter struct {
	state.Writer
	writes *atomic.Int64
}

func (c countingWriter) Set(k, v []byte) error {
	c.writes.Add(1)
	return c.Writer.Set(k, v)
}

func (c countingWriter) Delete(k []byte) error {
	c.writes.Add(1)
	return c.Writer.Delete(k)
}

package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// event is one thing that happened in a test network, in global order.
type event struct {
	kind string // "sync", "send", "recv"
	node string
	msg  raftpb.Message
}

// recorder keeps the global order of syncs, sends and receives.
type recorder = syncList[event]

// syncList is a list that several goroutines append to.
type syncList[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *syncList[T]) add(v T) {
	l.mu.Lock()
	l.items = append(l.items, v)
	l.mu.Unlock()
}

// snapshot returns a copy of the list.
func (l *syncList[T]) snapshot() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// walFS calls its hooks around every sync of a Pebble WAL file: before
// runs first (the interaction tests' crash at a sync), after once the sync
// returned (the ordering test's record of syncs). Nil hooks are skipped.
type walFS struct {
	vfs.FS
	before, after func()
}

type walFile struct {
	vfs.File
	fs *walFS
}

func (f *walFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &walFile{File: file, fs: f}, nil
}

func (f *walFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(name, file, err)
}

func (f *walFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(o, n, c)
	return f.wrap(n, file, err)
}

func (f *walFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(name, file, err)
}

// around runs the hooks around one sync.
func (w *walFile) around(sync func()) {
	if w.fs.before != nil {
		w.fs.before()
	}
	sync()
	if w.fs.after != nil {
		w.fs.after()
	}
}

func (w *walFile) Sync() (err error) {
	w.around(func() { err = w.File.Sync() })
	return err
}

func (w *walFile) SyncData() (err error) {
	w.around(func() { err = w.File.SyncData() })
	return err
}

func (w *walFile) SyncTo(n int64) (full bool, err error) {
	w.around(func() { full, err = w.File.SyncTo(n) })
	return full, err
}

// network delivers Raft traffic between engines in one process.
type network struct {
	mu      sync.Mutex
	engines map[string]*Engine
	rec     *recorder
	down    map[string]bool
	// filter, when set, sees every message that is not cut off by down and
	// returns what is delivered: it may drop messages or change the copies.
	filter func(from, to string, m *raftpb.Message) (deliver bool)
	// snapshotsTo counts the snapshots sent to each node.
	snapshotsTo map[string]int
}

type netSender struct {
	net  *network
	from string
}

func (s *netSender) SendRaft(addr string, msgs []transport.GroupMessage) {
	for _, m := range msgs {
		s.net.rec.add(event{kind: "send", node: s.from, msg: m.Msg})
	}
	s.net.mu.Lock()
	e, down, filter := s.net.engines[addr], s.net.down[addr] || s.net.down[s.from], s.net.filter
	s.net.mu.Unlock()
	if e == nil || down {
		return
	}
	deliver := make([]transport.GroupMessage, 0, len(msgs))
	for _, m := range msgs {
		if filter != nil && !filter(s.from, addr, &m.Msg) {
			continue
		}
		s.net.rec.add(event{kind: "recv", node: addr, msg: m.Msg})
		deliver = append(deliver, m)
	}
	e.Step(deliver)
}

func (s *netSender) SendSnapshot(ctx context.Context, addr string, msg transport.GroupMessage, data func(io.Writer) error) error {
	s.net.mu.Lock()
	e := s.net.engines[addr]
	if s.net.snapshotsTo == nil {
		s.net.snapshotsTo = map[string]int{}
	}
	s.net.snapshotsTo[addr]++
	s.net.mu.Unlock()
	if e == nil {
		return fmt.Errorf("no engine %s", addr)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(data(pw)) }()
	return e.HandleSnapshot(ctx, msg, pr)
}

// staticDir maps replica id i to node "n<i>".
type staticDir struct{}

func (staticDir) AddrOf(replica uint64) (string, bool) { return fmt.Sprintf("n%d", replica), true }

// counter is a test state machine: each command adds its byte value to "n"
// and returns the new total.
type counter struct{}

func (counter) Apply(w state.Writer, _ state.Meta, cmd []byte) ([]byte, error) {
	v, _, err := w.Get([]byte("n"))
	if err != nil {
		return nil, err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n += uint64(cmd[0])
	out := binary.BigEndian.AppendUint64(nil, n)
	return out, w.Set([]byte("n"), out)
}

// testNet is a set of engines that all hold group 1 with replicas 1..size.
type testNet struct {
	t   *testing.T
	net *network
	dbs map[string]*storage.DB
	fss map[string]*vfs.MemFS // each engine's disk, to make it full

	phaseMu sync.Mutex
	phases  []ProposalTimes // every engine's Config.OnProposal reports
}

func newTestNet(t *testing.T, size int, compaction uint64, edit ...func(*Config)) *testNet {
	t.Helper()
	tn := &testNet{t: t, net: &network{engines: map[string]*Engine{}, rec: &recorder{}, down: map[string]bool{}}, dbs: map[string]*storage.DB{}, fss: map[string]*vfs.MemFS{}}
	var peers []uint64
	for i := 1; i <= size; i++ {
		peers = append(peers, uint64(i))
	}
	for i := 1; i <= size; i++ {
		tn.addEngine(uint64(i), compaction, peers, edit...)
	}
	t.Cleanup(func() {
		for _, e := range tn.net.engines {
			e.Close()
		}
		for _, db := range tn.dbs {
			db.Close()
		}
	})
	return tn
}

// addEngine starts engine "n<id>" holding replica id of group 1, bootstrapped
// with peers (none: it waits to be sent the group). Each edit sees the
// engine's configuration last, in order.
func (tn *testNet) addEngine(id, compaction uint64, peers []uint64, edit ...func(*Config)) *Engine {
	t := tn.t
	t.Helper()
	name := fmt.Sprintf("n%d", id)
	mem := vfs.NewMem()
	tn.fss[name] = mem
	fs := &walFS{FS: mem, after: func() { tn.net.rec.add(event{kind: "sync", node: name}) }}
	db, err := storage.Open("db", storage.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	tn.dbs[name] = db
	cfg := DefaultConfig()
	cfg.DB, cfg.Sender, cfg.Directory = db, &netSender{net: tn.net, from: name}, staticDir{}
	cfg.Applier = func(uint64) state.Applier { return counter{} }
	cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	cfg.ReadRetry = 100 * time.Millisecond
	if compaction > 0 {
		cfg.CompactionThreshold = compaction
	}
	cfg.Accept = func(group, replica uint64) bool { return group == 1 }
	cfg.OnProposal = func(pt ProposalTimes) {
		tn.phaseMu.Lock()
		tn.phases = append(tn.phases, pt)
		tn.phaseMu.Unlock()
	}
	for _, f := range edit {
		f(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn.net.mu.Lock() // the engines started before this one send already
	tn.net.engines[name] = e
	tn.net.mu.Unlock()
	e.Start()
	if len(peers) > 0 {
		if err := e.OpenGroup(context.Background(), 1, id, peers); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// leader waits for a leader of group 1 and returns its engine.
func (tn *testNet) leader() *Engine {
	tn.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range tn.net.engines {
			if _, local := e.Leader(1); local {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	tn.t.Fatal("no leader elected")
	return nil
}

// nameOf returns the name of engine e ("n<replica>").
func (tn *testNet) nameOf(e *Engine) string {
	tn.net.mu.Lock()
	defer tn.net.mu.Unlock()
	for name, x := range tn.net.engines {
		if x == e {
			return name
		}
	}
	tn.t.Fatal("no such engine")
	return ""
}

// follower returns the name of an engine that does not lead group 1 now.
func (tn *testNet) follower() string {
	tn.t.Helper()
	lead := tn.leader()
	for name, e := range tn.net.engines {
		if e != lead {
			return name
		}
	}
	tn.t.Fatal("no follower: every engine leads")
	return ""
}

// snapshotsSentTo returns how many snapshots were sent to node.
func (tn *testNet) snapshotsSentTo(node string) int {
	tn.net.mu.Lock()
	defer tn.net.mu.Unlock()
	return tn.net.snapshotsTo[node]
}

// writeWhileDown cuts node off, proposes n increments through the leader
// and brings node back; it returns the counter's total.
func (tn *testNet) writeWhileDown(node string, n int) (total uint64) {
	tn.t.Helper()
	tn.net.mu.Lock()
	tn.net.down[node] = true
	tn.net.mu.Unlock()
	for range n {
		total = tn.propose(NewProposalID(), 1)
	}
	tn.net.mu.Lock()
	tn.net.down[node] = false
	tn.net.mu.Unlock()
	return total
}

// propose proposes through the current leader, retrying across elections.
func (tn *testNet) propose(id []byte, add byte) uint64 {
	tn.t.Helper()
	total, err := tn.proposeAt(id, add)
	if err != nil {
		tn.t.Fatalf("propose: %v", err)
	}
	return total
}

// proposeAt proposes through the current leader, retrying across elections
// and retryable refusals, and returns the result or the engine's refusal.
func (tn *testNet) proposeAt(id []byte, add byte) (uint64, error) {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		res, err := tn.leader().Propose(ctx, 1, id, []byte{add})
		if err == nil {
			return binary.BigEndian.Uint64(res), nil
		}
		if e, ok := errors.AsType[*errs.Error](err); (ok && !e.Retryable) || ctx.Err() != nil {
			return 0, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

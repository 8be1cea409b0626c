package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/backup"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/testcluster"
)

// loadWriter writes op(1), op(2), ... one at a time until stopped, each
// retried with its own idempotency key until acknowledged, and counts the
// acknowledged ones.
type loadWriter struct {
	acked atomic.Int64
	err   atomic.Value
}

func (w *loadWriter) run(ctx context.Context, stop <-chan struct{}, wg *sync.WaitGroup, op func(ctx context.Context, n int) error) {
	defer wg.Done()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		octx := client.WithIdempotencyKey(ctx, randomKey())
		for {
			err := op(octx, n)
			if err == nil {
				break
			}
			if !client.IsRetryable(err) || ctx.Err() != nil {
				w.err.Store(fmt.Errorf("op %d: %w", n, err))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.acked.Store(int64(n))
	}
}

// A backup taken while KV puts, chat posts and queue sends run restores
// into a new 3-node cluster whose replicas verify and whose data is the
// source's at the backup's indexes: every write acknowledged before the
// backup started, then a prefix of the writes that raced it, compared key
// by key and message by message; and the seeded state is the file's, pair
// by pair.
func TestBackupRestore_UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two 3-node clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	c := src.Client(0) // the first user: an admin
	srcURL := "http://" + src.Node(0).HTTPAddr()
	if _, err := c.CreateRoom(ctx, client.RoomSpec{Name: "load"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}

	var kvW, chatW, queueW loadWriter
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go kvW.run(ctx, stop, &wg, func(ctx context.Context, n int) error {
		_, err := src.Client(1).KVPut(ctx, fmt.Sprintf("{w}/%06d", n), []byte(fmt.Sprint("value ", n)), client.PutOptions{})
		return err
	})
	go chatW.run(ctx, stop, &wg, func(ctx context.Context, n int) error {
		_, err := src.Client(2).Post(ctx, "load", fmt.Sprint("message ", n), client.PostOptions{})
		return err
	})
	go queueW.run(ctx, stop, &wg, func(ctx context.Context, n int) error {
		_, err := c.Send(ctx, "jobs", fmt.Sprint("job ", n), client.SendOptions{})
		return err
	})
	writers := []*loadWriter{&kvW, &chatW, &queueW}
	for _, w := range writers {
		for w.acked.Load() < 20 && w.err.Load() == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var before [3]int64
	for i, w := range writers {
		before[i] = w.acked.Load()
	}

	file := filepath.Join(t.TempDir(), "parley.backup")
	out := mustRun(t, ctx, "backup", "--out", file, "--server", srcURL, "--token", c.Token())
	var during [3]int64
	for i, w := range writers {
		during[i] = w.acked.Load()
	}
	close(stop)
	wg.Wait()
	for _, w := range writers {
		if err := w.err.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out, "written to "+file+": 5 groups") {
		t.Errorf("backup output: %s", out)
	}
	t.Logf("acknowledged before the backup %v, by its end %v", before, during)

	out = mustRun(t, ctx, "backup", "verify", file)
	if !strings.Contains(out, "every checksum matches") || !strings.Contains(out, "4 partitions, replication factor 3") {
		t.Errorf("backup verify: %s", out)
	}

	t.Run("a corrupt file is refused and changes nothing", func(t *testing.T) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40
		bad := filepath.Join(t.TempDir(), "bad.backup")
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if r := run(ctx, nil, "", "backup", "verify", bad); r.code == 0 || !strings.Contains(r.stderr, "backup file is corrupt") {
			t.Errorf("verify of a corrupt file: exit %d, %s", r.code, r.stderr)
		}
		dir := filepath.Join(t.TempDir(), "d")
		if r := run(ctx, nil, "", "restore", "--from", bad, "--data-dir", dir); r.code == 0 || !strings.Contains(r.stderr, "backup file is corrupt") {
			t.Errorf("restore of a corrupt file: exit %d, %s", r.code, r.stderr)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("a refused restore left %s: %v", dir, err)
		}
	})

	dir := filepath.Join(t.TempDir(), "n1")
	out = mustRun(t, ctx, "restore", "--from", file, "--data-dir", dir)
	if !strings.Contains(out, "restored 4 partitions") || !strings.Contains(out, "--partitions 4") {
		t.Errorf("restore output: %s", out)
	}
	mustSeededAsFile(t, dir, file)
	if r := run(ctx, nil, "", "serve", "--data-dir", dir, "--id", "n1", "--partitions", "8", "--http", "127.0.0.1:0", "--cluster", "127.0.0.1:0"); r.code == 0 ||
		!strings.Contains(r.stderr, "restored from a backup of 4 partitions: start it with --partitions 4") {
		t.Errorf("serve with the wrong partitions: exit %d, %s", r.code, r.stderr)
	}

	dst := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true, Configure: func(i int, cfg *config.Config) {
		if i == 0 {
			cfg.DataDir = dir
		}
	}})
	d := dst.Client(1) // the restored account signs in
	dstURL := "http://" + dst.Node(0).HTTPAddr()
	mustRun(t, ctx, "cluster", "verify", "--server", dstURL, "--token", d.Token())
	st, err := d.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if srcSt, _ := c.Cluster(ctx); st.ClusterID == srcSt.ClusterID {
		t.Errorf("the restored cluster has the source's id %s", st.ClusterID)
	}

	// KV, key by key: every key acknowledged before the backup, then a
	// prefix of the rest, each with the source's value and version.
	got := allKeys(t, ctx, d, "{w}/")
	want := allKeys(t, ctx, c, "{w}/")
	if int64(len(got)) < before[0] || int64(len(got)) > during[0]+1 || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Errorf("restored %d keys, acknowledged before %d, by the end %d; differ from the source's: %v", len(got), before[0], during[0], !reflect.DeepEqual(got, want[:min(len(got), len(want))]))
	}
	for _, k := range got {
		gv, _, err1 := d.KVGet(ctx, k.Key, client.GetOptions{})
		sv, _, err2 := c.KVGet(ctx, k.Key, client.GetOptions{})
		if err1 != nil || err2 != nil || !bytes.Equal(gv, sv) {
			t.Fatalf("%s: restored %q %v, source %q %v", k.Key, gv, err1, sv, err2)
		}
	}
	// Chat and queue, message by message.
	gotEv, wantEv := allEvents(t, ctx, d, "load"), allEvents(t, ctx, c, "load")
	if msgs := countKind(gotEv, "message"); int64(msgs) < before[1] || int64(msgs) > during[1]+1 || !reflect.DeepEqual(gotEv, wantEv[:len(gotEv)]) {
		t.Errorf("restored %d messages, acknowledged before %d, by the end %d; same as the source's: %v", msgs, before[1], during[1], reflect.DeepEqual(gotEv, wantEv[:min(len(gotEv), len(wantEv))]))
	}
	gotQ, wantQ := allQueued(t, ctx, d, "jobs"), allQueued(t, ctx, c, "jobs")
	t.Logf("restored %d keys, %d room events, %d queued messages", len(got), len(gotEv), len(gotQ))
	if int64(len(gotQ)) < before[2] || int64(len(gotQ)) > during[2]+1 || !reflect.DeepEqual(gotQ, wantQ[:len(gotQ)]) {
		t.Errorf("restored %d queued messages, acknowledged before %d, by the end %d", len(gotQ), before[2], during[2])
	}
}

// mustSeededAsFile compares every partition seeded in dir with its section
// of the backup file, pair by pair, and its applied index.
func mustSeededAsFile(t *testing.T, dir, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[uint64]map[string]string{}
	applied := map[uint64]uint64{}
	var cur uint64
	_, err = backup.Read(f, backup.Visitor{
		Section: func(g, a uint64) error { cur, sections[g], applied[g] = g, map[string]string{}, a; return nil },
		Pair:    func(k, v []byte) error { sections[cur][string(k)] = string(v); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for g := uint64(1); g <= 4; g++ {
		snap, err := db.StateSnapshot(g)
		if err != nil {
			t.Fatal(err)
		}
		seeded := map[string]string{}
		_ = snap.Scan(nil, nil, func(k, v []byte) bool { seeded[string(k)] = string(v); return true })
		a, _ := snap.Applied()
		_ = snap.Close()
		if a != applied[g] || !reflect.DeepEqual(seeded, sections[g]) {
			t.Errorf("partition %d seeded at %d with %d pairs; the file has %d pairs at %d", g, a, len(seeded), len(sections[g]), applied[g])
		}
	}
	if groups, _ := db.Groups(); !reflect.DeepEqual(groups, []uint64{1, 2, 3, 4}) {
		t.Errorf("seeded groups %v, want the partitions only", groups)
	}
}

func allKeys(t *testing.T, ctx context.Context, c *client.Client, prefix string) []client.KVKey {
	t.Helper()
	var out []client.KVKey
	after := ""
	for {
		page, err := c.KVList(ctx, prefix, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].Key
	}
}

func allEvents(t *testing.T, ctx context.Context, c *client.Client, room string) []client.Event {
	t.Helper()
	var out []client.Event
	var after uint64
	for {
		page, err := c.History(ctx, room, client.HistoryOptions{After: after, HasAfter: true, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].Seq
	}
}

func countKind(evs []client.Event, kind string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func allQueued(t *testing.T, ctx context.Context, c *client.Client, queue string) []client.QueueMessage {
	t.Helper()
	var out []client.QueueMessage
	var after uint64
	for {
		page, err := c.Browse(ctx, queue, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

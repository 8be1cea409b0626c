package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/partkey"
)

// mapServer serves GET /api/v1/partitions with the map *m holds, counting
// the requests.
func mapServer(t *testing.T, m *atomic.Pointer[client.PartitionMap], asked *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/partitions" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

// keyOn returns a kv key whose partition (of 4) is p.
func keyOn(t *testing.T, p uint64) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		k := "k" + strconv.Itoa(i)
		if partkey.Of(k, 4) == p {
			return k
		}
	}
	t.Fatalf("no key on partition %d", p)
	return ""
}

func TestPool_PicksTheLeadersClient(t *testing.T) {
	var maps [3]atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	var srvs [3]*httptest.Server
	var clients [3]*client.Client
	for i := range srvs {
		srvs[i] = mapServer(t, &maps[i], &asked)
		clients[i] = client.New(srvs[i].URL)
	}
	addr := func(i int) string { return strings.TrimPrefix(srvs[i].URL, "http://") }
	// Server 0 knows partitions 1 and 2 (its own, and a stale hint that
	// server 2 leads 2); server 2 says it leads 2 itself and knows that
	// partition 3 is led outside the pool; nobody knows 4.
	maps[0].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 4, Leaders: []string{addr(0), addr(1), "", ""}})
	maps[1].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 4, Leaders: []string{addr(0), addr(1), "", ""}})
	maps[2].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 4, Leaders: []string{"", addr(2), "10.9.9.9:7070", ""}})
	pool := client.NewPool(clients[:]...)
	fallback := client.New("http://fallback.invalid")
	if got := pool.ForKV(keyOn(t, 1), fallback); got != fallback {
		t.Errorf("before any map: ForKV picked %v, want the fallback", got)
	}
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if led, parts := pool.Reach(); led != 2 || parts != 4 {
		t.Errorf("Reach() = %d, %d; want 2 of 4 partitions led by a server of the pool", led, parts)
	}
	for _, tc := range []struct {
		p    uint64
		want *client.Client
		why  string
	}{
		{1, clients[0], "server 0 leads partition 1"},
		{2, clients[2], "server 2 says it leads partition 2, over server 0's and 1's word"},
		{3, fallback, "partition 3's leader is not in the pool"},
		{4, fallback, "no server knows partition 4's leader"},
	} {
		key := keyOn(t, tc.p)
		if got := pool.ForKV(key, fallback); got != tc.want {
			t.Errorf("ForKV(%q), partition %d: got %v, want %v: %s", key, tc.p, got, tc.want, tc.why)
		}
	}
	// A kv key goes by its hash tag; a queue by its name.
	tagged := "{" + keyOn(t, 1) + "}/orders"
	if got := pool.ForKV(tagged, fallback); got != clients[0] {
		t.Errorf("ForKV(%q) went by the whole key, not its hash tag", tagged)
	}
	if got := pool.ForQueue(keyOn(t, 2), fallback); got != clients[2] {
		t.Errorf("ForQueue: got %v, want server 2's client", got)
	}
}

func TestPool_RefusesAMapItCannotCompute(t *testing.T) {
	var m atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	s := mapServer(t, &m, &asked)
	c := client.New(s.URL)
	self := strings.TrimPrefix(s.URL, "http://")
	fallback := client.New("http://fallback.invalid")
	for _, bad := range []client.PartitionMap{
		{Hash: "murmur3", Partitions: 1, Leaders: []string{self}},
		{Hash: "fnv1a-64", Partitions: 2, Leaders: []string{self}}, // too short
		{Hash: "fnv1a-64", Partitions: 0, Leaders: []string{}},
	} {
		m.Store(&bad)
		pool := client.NewPool(c)
		_ = pool.Refresh(context.Background()) // an error or a map it will not route by
		if got := pool.ForKV("a", fallback); got != fallback {
			t.Errorf("map %+v: picked %v, want the fallback", bad, got)
		}
	}
}

// A server that knows no cluster yet (a node just started) does not hide
// the map another server gives.
func TestPool_SkipsAServerWithoutAMap(t *testing.T) {
	var empty, full atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	s0, s1 := mapServer(t, &empty, &asked), mapServer(t, &full, &asked)
	empty.Store(&client.PartitionMap{Hash: "fnv1a-64", Leaders: []string{}})
	full.Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 1, Leaders: []string{strings.TrimPrefix(s1.URL, "http://")}})
	c0, c1 := client.New(s0.URL), client.New(s1.URL)
	pool := client.NewPool(c0, c1)
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pool.ForKV("a", c0); got != c1 {
		t.Errorf("ForKV: got %v, want server 1's client", got)
	}
	only := client.NewPool(c0)
	if err := only.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "no server knows the partition map") {
		t.Errorf("Refresh with only a server without a map: %v", err)
	}
}

func TestPool_RefreshFailsOnlyWhenNoServerAnswers(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	pool := client.NewPool(client.New(down.URL))
	if err := pool.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh with every server down: no error")
	}
	var m atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	up := mapServer(t, &m, &asked)
	m.Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 1, Leaders: []string{strings.TrimPrefix(up.URL, "http://")}})
	upc := client.New(up.URL)
	pool = client.NewPool(client.New(down.URL), upc)
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh with one server of two up: %v", err)
	}
	if got := pool.ForQueue("q", nil); got != upc {
		t.Errorf("ForQueue: got %v, want the live server's client", got)
	}
}

func TestPool_FollowsAMovedLeader(t *testing.T) {
	var maps [2]atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	var clients [2]*client.Client
	var addrs [2]string
	for i := range clients {
		s := mapServer(t, &maps[i], &asked)
		clients[i], addrs[i] = client.New(s.URL), strings.TrimPrefix(s.URL, "http://")
	}
	set := func(leader string) {
		for i := range maps {
			maps[i].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 1, Leaders: []string{leader}})
		}
	}
	set(addrs[0])
	pool := client.NewPool(clients[:]...)
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pool.ForKV("a", nil); got != clients[0] {
		t.Fatalf("ForKV: got %v, want server 0's client", got)
	}
	set(addrs[1]) // the leader moved
	deadline := time.Now().Add(10 * client.PoolRefresh)
	for pool.ForKV("a", nil) != clients[1] {
		if time.Now().After(deadline) {
			t.Fatalf("the pool still picks the old leader %v after it moved", 10*client.PoolRefresh)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Picks refresh in the background at most once per PoolRefresh: the
	// servers were not asked once per pick.
	if n := asked.Load(); n > 2*12 {
		t.Errorf("the servers were asked %d times for the map", n)
	}
}

// A server that stops answering is routed nothing after the next refresh,
// though the others still name it leader (no new leader elected yet).
func TestPool_RoutesNothingToAServerThatDoesNotAnswer(t *testing.T) {
	var maps [2]atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	s0, s1 := mapServer(t, &maps[0], &asked), mapServer(t, &maps[1], &asked)
	c0, c1 := client.New(s0.URL), client.New(s1.URL)
	leader := strings.TrimPrefix(s1.URL, "http://")
	for i := range maps {
		maps[i].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 1, Leaders: []string{leader}})
	}
	pool := client.NewPool(c0, c1)
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pool.ForKV("a", c0); got != c1 {
		t.Fatalf("ForKV: got %v, want the leader's client", got)
	}
	s1.Close()
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pool.ForKV("a", c0); got != c0 {
		t.Errorf("ForKV after the leader's server went down: got %v, want the fallback", got)
	}
	if led, _ := pool.Reach(); led != 0 {
		t.Errorf("Reach() = %d partitions after the leader's server went down, want 0", led)
	}
}

// TestPool_LearnsTheNamesServersAdvertise: a pool built on other names for
// its servers (here "localhost" for the advertised 127.0.0.1) learns each
// server's advertised address from its answer and routes to it.
func TestPool_LearnsTheNamesServersAdvertise(t *testing.T) {
	var maps [2]atomic.Pointer[client.PartitionMap]
	var asked atomic.Int64
	var srvs [2]*httptest.Server
	var clients [2]*client.Client
	for i := range srvs {
		srvs[i] = mapServer(t, &maps[i], &asked)
		clients[i] = client.New(strings.Replace(srvs[i].URL, "127.0.0.1", "localhost", 1))
	}
	addr := func(i int) string { return strings.TrimPrefix(srvs[i].URL, "http://") }
	leaders := []string{addr(0), addr(1), addr(1), ""}
	for i := range maps {
		maps[i].Store(&client.PartitionMap{Hash: "fnv1a-64", Partitions: 4, Leaders: leaders, Self: addr(i)})
	}
	pool := client.NewPool(clients[:]...)
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if led, parts := pool.Reach(); led != 3 || parts != 4 {
		t.Errorf("Reach() = %d, %d; want 3 of 4 partitions led by a server of the pool", led, parts)
	}
	fallback := client.New("http://fallback.invalid")
	for p, want := range map[uint64]*client.Client{1: clients[0], 2: clients[1], 3: clients[1], 4: fallback} {
		if got := pool.ForKV(keyOn(t, p), fallback); got != want {
			t.Errorf("partition %d: picked %p, want %p", p, got, want)
		}
	}

	// A server that stops answering is routed nothing, under either name.
	srvs[1].Close()
	if err := pool.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pool.ForKV(keyOn(t, 2), fallback); got != fallback {
		t.Errorf("partition 2 of a server that is down: picked %p, want the fallback", got)
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// Counts in command output: "1 node", never "1 nodes", and the metadata
// group named apart from the partitions wherever it is counted.

func TestWriteClusterStatus_Counts(t *testing.T) {
	for _, tc := range []struct {
		nodes, partitions, protocol int
		want                        string
	}{
		{1, 1, 0, "cluster c1: 1 node, 1 partition\n"},
		{3, 16, 2, "cluster c1: 3 nodes, 16 partitions, protocol 2\n"},
		{0, 0, 0, "cluster c1: 0 nodes, 0 partitions\n"},
	} {
		st := &client.ClusterStatus{ClusterID: "c1", Protocol: tc.protocol}
		for i := range tc.nodes {
			st.Nodes = append(st.Nodes, client.NodeStatus{ID: "n" + string(rune('1'+i))})
		}
		for i := range tc.partitions {
			st.Partitions = append(st.Partitions, client.PartitionStatus{ID: uint64(i + 1)})
		}
		var b bytes.Buffer
		if err := writeClusterStatus(&b, st); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(b.String(), "\n"); got+"\n" != tc.want {
			t.Errorf("%d nodes, %d partitions: %q, want %q", tc.nodes, tc.partitions, got, tc.want)
		}
	}
}

// verifyReport returns a report of partitions 1..n, and of the metadata
// group when meta, where the groups in bad differ.
func verifyReport(n int, meta bool, bad ...uint64) *client.VerifyReport {
	rep := &client.VerifyReport{}
	first := uint64(1)
	if meta {
		first = 0
	}
	for g := first; g <= uint64(n); g++ {
		pc := client.PartitionCheck{Group: g, Applied: 5, Match: true, Replicas: []client.ReplicaCheck{{Node: "n1", Replica: g*10 + 1, Checksum: "ab"}}}
		for _, b := range bad {
			if b == g {
				pc.Match = false
				rep.Mismatches++
			}
		}
		rep.Partitions = append(rep.Partitions, pc)
	}
	return rep
}

func TestVerifySummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *client.VerifyReport
		want string
	}{
		{"all match", verifyReport(16, true), "16 partitions and the metadata group: every replica matches"},
		{"one partition", verifyReport(1, true), "1 partition and the metadata group: every replica matches"},
		{"no metadata group", verifyReport(2, false), "2 partitions: every replica matches"},
		{"partitions differ", verifyReport(16, true, 3, 5), "replicas differ in 2 of 16 partitions (3, 5)"},
		{"metadata group differs", verifyReport(16, true, 0), "replicas differ in the metadata group"},
		{"both differ", verifyReport(16, true, 0, 7), "replicas differ in 1 of 16 partitions (7) and in the metadata group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifySummary(tc.rep); got != tc.want {
				t.Errorf("verifySummary = %q, want %q", got, tc.want)
			}
			var b bytes.Buffer
			if err := writeVerify(&b, tc.rep); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(b.String(), "\n"+tc.want+"\n") {
				t.Errorf("writeVerify does not end with the summary:\n%s", b.String())
			}
		})
	}
	t.Run("the metadata group's row is labelled", func(t *testing.T) {
		var b bytes.Buffer
		if err := writeVerify(&b, verifyReport(1, true)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nmeta       5 ") || strings.Contains(b.String(), "\n0 ") {
			t.Errorf("writeVerify:\n%s", b.String())
		}
	})
}

func TestClusterDrain_OneMove(t *testing.T) {
	f := &fakeAdmin{
		statuses: []client.ClusterStatus{withNode3(1, client.Move{Partition: 4, From: "n3", To: "n1", Phase: "learner"}), withNode3(0)},
		moves:    []client.Move{{Partition: 4, From: "n3", To: "n1"}},
	}
	url := f.start(t)
	out := mustRun(t, context.Background(), "cluster", "drain", "n3", "--interval", "1ms", "--server", url, "--token", "t")
	want := `draining n3: 1 move planned
partition 4: n3 -> n1 (learner)
n3 holds 1 partition replica
n3 holds 0 partition replicas
n3 is drained; remove it with: parley cluster remove n3
`
	if out != want {
		t.Errorf("drain printed:\n%s\nwant:\n%s", out, want)
	}
}

// roomServer serves a room's join and member list as the API would.
func roomServer(t *testing.T, members []client.Member) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/rooms/{room}/join", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(client.Room{Name: r.PathValue("room"), Members: len(members)})
	})
	mux.HandleFunc("GET /api/v1/rooms/{room}/members", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"members": members})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRoomJoin_Members(t *testing.T) {
	for _, tc := range []struct {
		members []client.Member
		want    string
	}{
		{[]client.Member{{Username: "bob"}}, "joined lobby (1 member)\n"},
		{[]client.Member{{Username: "alice"}, {Username: "bob"}}, "joined lobby (2 members)\n"},
	} {
		url := roomServer(t, tc.members)
		if out := mustRun(t, context.Background(), "room", "join", "lobby", "--server", url, "--token", "t"); out != tc.want {
			t.Errorf("room join printed %q, want %q", out, tc.want)
		}
	}
}

func TestChatActive_Members(t *testing.T) {
	for _, tc := range []struct {
		members []client.Member
		want    string
	}{
		{[]client.Member{{Username: "bob"}}, "-- nobody online in lobby (1 member: bob)\n"},
		{[]client.Member{{Username: "bob", Online: true}}, "-- online in lobby (1 of 1 member): bob\n"},
		{[]client.Member{{Username: "alice"}, {Username: "bob", Online: true}}, "-- online in lobby (1 of 2 members): bob\n"},
	} {
		url := roomServer(t, tc.members)
		var out bytes.Buffer
		s := &chatSession{e: &Env{Stdout: &out, Stderr: io.Discard}, screen: newPlainScreen(nil, &out), room: "lobby",
			timeout: 5 * time.Second, servers: []string{url}, c: client.New(url, client.WithToken("t"))}
		if _, err := s.who(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("ACTIVE printed %q, want %q", out.String(), tc.want)
		}
	}
}

func TestBench_ProgressNamesClients(t *testing.T) {
	for _, tc := range []struct {
		parallel string
		want     string
	}{
		{"1", "benchmarking fsync with 1 client against "},
		{"2", "benchmarking fsync with 2 clients against "},
	} {
		r := run(context.Background(), nil, "", "bench", "fsync", "--dir", t.TempDir(), "--count", "2", "--parallel", tc.parallel)
		if r.code != 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--parallel %s: exit %d, stderr %q; want it to contain %q", tc.parallel, r.code, r.stderr, tc.want)
		}
	}
}

func TestWriteLag_Counts(t *testing.T) {
	for _, tc := range []struct {
		rep  lagReport
		want string
	}{
		{lagReport{Duration: "1s", Polls: 1}, "follower lag over 1s (1 poll): "},
		{lagReport{Duration: "5s", Polls: 10, LoadWrites: 1}, "follower lag over 5s (10 polls, 1 load write): "},
	} {
		var b bytes.Buffer
		if err := writeLag(&b, tc.rep); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tc.want) {
			t.Errorf("writeLag: %q, want it to start with %q", b.String(), tc.want)
		}
	}
}

// A partition on two voters survives no node failure: the status says so
// under the tables, naming the partitions; one or three voters, or a
// learner beside one voter, draw no warning.
func TestWriteClusterStatus_WarnsOfTwoVoters(t *testing.T) {
	replicas := func(roles ...string) []client.ReplicaStatus {
		var out []client.ReplicaStatus
		for i, r := range roles {
			out = append(out, client.ReplicaStatus{Node: "n" + string(rune('1'+i)), Role: r})
		}
		return out
	}
	status := func(parts ...[]client.ReplicaStatus) string {
		st := &client.ClusterStatus{ClusterID: "c1"}
		for i, r := range parts {
			st.Partitions = append(st.Partitions, client.PartitionStatus{ID: uint64(i + 1), Replicas: r})
		}
		var b bytes.Buffer
		if err := writeClusterStatus(&b, st); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	out := status(replicas("leader", "follower"), replicas("leader", "follower", "learner"),
		replicas("leader", "follower", "follower"), replicas("leader", "follower"))
	if want := "\nwarning: 3 partitions 1-2, 4 on two voters: each stops taking writes while either of its nodes is down"; !strings.Contains(out, want) {
		t.Fatalf("status:\n%s\nwant it to contain %q", out, want)
	}
	if out := status(replicas("leader"), replicas("leader", "learner"), replicas("leader", "follower", "follower")); strings.Contains(out, "warning") {
		t.Fatalf("status of partitions on one or three voters warns:\n%s", out)
	}
}

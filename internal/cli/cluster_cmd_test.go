package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// postRetrying posts text until the cluster accepts it, with one
// idempotency key so it applies once.
func postRetrying(t *testing.T, ctx context.Context, c *client.Client, room, text string) {
	t.Helper()
	ctx = client.WithIdempotencyKey(ctx, randomKey())
	for {
		_, err := c.Post(ctx, room, text, client.PostOptions{})
		if err == nil {
			return
		}
		if !client.IsRetryable(err) || ctx.Err() != nil {
			t.Fatalf("post %q: %v", text, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClusterCommands_ThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	tc := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c0 := tc.Client(0)
	url0 := "http://" + tc.Node(0).HTTPAddr()

	t.Run("lag under load", func(t *testing.T) {
		// Each node must follow some partition to report a follower's lag:
		// one that leads all four (a loaded machine's elections) has none.
		tc.WaitLeadersBalanced(60 * time.Second)
		out := mustRun(t, ctx, "cluster", "lag", "--duration", "1s", "--interval", "50ms", "--load", "2", "--json", "--server", url0, "--token", c0.Token())
		var rep lagReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("lag --json: %v\n%s", err, out)
		}
		if rep.Polls == 0 || rep.LoadWrites == 0 || len(rep.ByReplicas) != 1 || rep.ByReplicas[0].Group != "3 replicas" ||
			rep.ByReplicas[0].Partitions != 4 || rep.ByReplicas[0].Samples < 8 || len(rep.ByNode) != 3 {
			t.Errorf("lag report = %+v", rep)
		}
		table := mustRun(t, ctx, "cluster", "lag", "--duration", "1s", "--server", url0, "--token", c0.Token())
		if !regexp.MustCompile(`(?m)^\s+REPLICAS\s+PARTITIONS\s+SAMPLES\s+ENTRIES P50\s+P99\s+MAX\s+MS P50\s+P99\s+MAX\s+MEAN MS\s*\n\s+3\s+4\s+\d+`).MatchString(table) {
			t.Errorf("lag table:\n%s", table)
		}
	})

	t.Run("chat resumes on another node when its node dies", func(t *testing.T) {
		chat := startChat(t, "ops", "--server", url0, "--token", c0.Token(), "--create")
		chat.waitOut(`-- joined ops on \S+ \(1 member, 3 nodes known\)`)
		c1 := tc.Client(1)
		postRetrying(t, ctx, c1, "ops", "before the failure")
		chat.waitOut(`\] tester: before the failure\n`)

		tc.Kill(0)
		for i := range 5 {
			postRetrying(t, ctx, c1, "ops", "while away "+string(rune('a'+i)))
		}
		// A clean sentence, never a raw Go error.
		chat.waitOut(`-- lost the connection to ` + regexp.QuoteMeta(url0) +
			` \((the connection was closed|it refused the connection|it did not answer in time)\); trying the other nodes\n`)
		chat.waitOut(`-- reconnected to http://\S+; resuming after #\d+\n`)
		chat.waitOut(`\] tester: while away e\n`)
		chat.typeLine("typed after the failover")
		chat.waitOut(`\] tester: typed after the failover\n`)
		if code := chat.quit(); code != 0 {
			t.Errorf("chat exit %d, stderr %s", code, chat.errOut)
		}
		out := chat.out.String()
		for _, msg := range []string{"before the failure", "while away a", "while away b", "while away c", "while away d", "while away e", "typed after the failover"} {
			if n := strings.Count(out, "tester: "+msg+"\n"); n != 1 {
				t.Errorf("%q shown %d times, want once:\n%s", msg, n, out)
			}
		}
		evs, err := c1.History(ctx, "ops", client.HistoryOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		for _, m := range regexp.MustCompile(`\] (tester: .*)\n`).FindAllStringSubmatch(out, -1) {
			shown = append(shown, m[1])
		}
		var want []string
		for _, ev := range evs {
			if ev.Kind == "message" {
				want = append(want, "tester: "+ev.Text)
			}
		}
		if strings.Join(shown, "|") != strings.Join(want, "|") {
			t.Errorf("chat showed %q, the room's history is %q", shown, want)
		}
	})
}

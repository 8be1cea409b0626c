package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
)

func TestBenchChat_Posts(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	o, err := ParseBenchChat("parley bench chat-post", []string{
		"--servers", url, "--clients", "4", "--requests", "40", "--rooms", "4", "--size", "2000",
		"--token", token, "--json", filepath.Join(t.TempDir(), "chat.json"), "-q",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchChat(ctx, o, out, out) })
	if rep.Workload != "chat-post" || rep.Ops != 40 || rep.Errors != 0 {
		t.Fatalf("report: workload %s, ops %d, errors %d (%v); want chat-post, 40, 0", rep.Workload, rep.Ops, rep.Errors, rep.ErrorKinds)
	}

	// The posts are in the rooms' history, with the size asked for.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(url, client.WithToken(token))
	rooms, err := c.ListRooms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	posts, benchRooms := 0, 0
	for _, r := range rooms {
		if !strings.HasPrefix(r.Name, "bench-") {
			continue
		}
		benchRooms++
		evs, err := c.History(ctx, r.Name, client.HistoryOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == "message" {
				posts++
				if len(ev.Text) != 2000 {
					t.Errorf("room %s seq %d: text of %d characters, want 2000", r.Name, ev.Seq, len(ev.Text))
				}
			}
		}
	}
	if benchRooms != 4 || posts != 40 {
		t.Errorf("%d bench rooms holding %d posts, want 4 and 40", benchRooms, posts)
	}
}

func TestParseBenchChat_Invalid(t *testing.T) {
	for _, args := range [][]string{{"--rooms", "0"}, {"--size", "0"}, {"extra"}} {
		if _, err := ParseBenchChat("parley bench chat-post", args, nil); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// runBenchFunc runs a benchmark that writes its JSON report to file and
// returns the decoded report.
func runBenchFunc(t *testing.T, file string, run func(ctx context.Context, out *bytes.Buffer) error) bench.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var rep bench.Report
	mustDecode(t, file, func(b []byte) error { return json.Unmarshal(b, &rep) })
	return rep
}

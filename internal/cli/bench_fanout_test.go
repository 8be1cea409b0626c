package cli

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchFanout_EveryPostReachesEverySubscriber(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	if !streamServed(t, url, token) {
		t.Skip("GET /api/v1/stream is not served by this build")
	}
	o, err := ParseBenchFanout("parley bench chat-fanout", []string{
		"--servers", url, "--clients", "2", "--requests", "30", "--rooms", "3", "--subscribers", "4",
		"--drain", "30s", "--token", token, "--json", filepath.Join(t.TempDir(), "fanout.json"), "-q",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchFanout(ctx, o, out, out) })
	if rep.Workload != "chat-fanout" || rep.Ops != 30 || rep.Errors != 0 {
		t.Fatalf("report: workload %s, ops %d, errors %d (%v); want chat-fanout, 30, 0", rep.Workload, rep.Ops, rep.Errors, rep.ErrorKinds)
	}
	if d := rep.Params["deliveries"]; !strings.HasPrefix(d, "120 of 120 expected") {
		t.Errorf("deliveries %q, want 120 of 120 (30 posts x 4 subscribers)", d)
	}
	if e := rep.Params["stream_errors"]; e != "" {
		t.Errorf("stream errors: %s", e)
	}
	if rep.Params["delivery_p99_ms"] == "" || rep.Params["delivery_p99_over_post_p99"] == "" {
		t.Errorf("no delivery latency in %v", rep.Params)
	}
}

func TestParseBenchFanout_Defaults(t *testing.T) {
	o, err := ParseBenchFanout("parley bench chat-fanout", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rooms != 100 || o.Subscribers != 100 || o.Size != 200 {
		t.Errorf("rooms %d subscribers %d size %d, want 100, 100, 200", o.Rooms, o.Subscribers, o.Size)
	}
	for _, args := range [][]string{{"--subscribers", "0"}, {"--size", "20"}} {
		if _, err := ParseBenchFanout("parley bench chat-fanout", args, nil); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// streamServed reports whether the server at url has the stream route
// (a plain GET of a WebSocket route is refused, but not with 404).
func streamServed(t *testing.T, url, token string) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/api/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound
}

package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestBenchLinks_CreateAndRedirect(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	dir := t.TempDir()
	for _, mode := range []string{"create", "redirect"} {
		t.Run(mode, func(t *testing.T) {
			o, err := ParseBenchLinks("parley bench links", []string{
				"--servers", url, "--clients", "4", "--requests", "60", "--mode", mode, "--links", "20",
				"--token", token, "--json", filepath.Join(dir, mode+".json"), "-q",
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep := runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchLinks(ctx, o, out, out) })
			if rep.Workload != "links/"+mode || rep.Ops != 60 || rep.Errors != 0 {
				t.Fatalf("report: workload %s, ops %d, errors %d (%v); want links/%s, 60, 0", rep.Workload, rep.Ops, rep.Errors, rep.ErrorKinds, mode)
			}
		})
	}

	// create made 60 links, redirect 20 more; redirects counted as hits.
	c := client.New(url, client.WithToken(token))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		links, err := c.MyLinks(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		n, hits := 0, uint64(0)
		for _, l := range links {
			if strings.HasPrefix(l.Code, "bench-") {
				n++
				hits += l.Hits
			}
		}
		if n == 80 && hits == 60 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bench links with %d hits, want 80 and 60", n, hits)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBenchLinks_RedirectToUnknownServerFails(t *testing.T) {
	o, err := ParseBenchLinks("parley bench links", []string{"--servers", "http://127.0.0.1:1", "--requests", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := BenchLinks(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v, want one naming the server", err)
	}
	if _, err := ParseBenchLinks("parley bench links", []string{"--mode", "follow"}, nil); err == nil {
		t.Error("--mode follow: no error")
	}
}

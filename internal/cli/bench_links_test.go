package cli

import (
	"bytes"
	"context"
	"os"
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

func TestBenchLinks_Map(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	dir := t.TempDir()
	m := filepath.Join(dir, "codes.map")
	if err := os.WriteFile(m, []byte("# code url\nm1 https://example.org/one\n\nm2 https://example.org/two?x=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first run creates the map's links, the second finds them.
	for _, extra := range [][]string{nil, {"--existing"}} {
		o, err := ParseBenchLinks("parley bench links", append([]string{
			"--servers", url, "--clients", "2", "--requests", "20", "--map", m,
			"--token", token, "--json", filepath.Join(dir, "map.json"), "-q",
		}, extra...), nil)
		if err != nil {
			t.Fatal(err)
		}
		rep := runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchLinks(ctx, o, out, out) })
		if rep.Ops != 20 || rep.Errors != 0 || rep.Params["links"] != "2" {
			t.Fatalf("%v: ops %d, errors %d (%v), links %s; want 20, 0, 2", extra, rep.Ops, rep.Errors, rep.ErrorKinds, rep.Params["links"])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if loc, err := client.New(url).Resolve(ctx, "m2"); err != nil || loc != "https://example.org/two?x=1" {
		t.Errorf("m2 redirects to %q (%v)", loc, err)
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

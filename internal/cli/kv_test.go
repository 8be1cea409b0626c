package cli

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestKVCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, _ := startServe(t)
	tok := signUp(t, url)
	srv := []string{"--server", url, "--token", tok}
	cmd := func(args ...string) []string { return append(args, srv...) }

	watchOut, watchErr, stopWatch := background(t, cmd("kv", "watch", "--prefix", "app/", "--count", "4", "-v")...)
	// The watch starts from now: -v prints its starting token once open.
	waitFor(t, watchErr, watchOut, regexp.MustCompile(`\d+:\d+`), 30*time.Second)

	if v := mustRun(t, ctx, cmd("kv", "put", "app/a", "one")...); v != "1\n" {
		t.Fatalf("put = %q", v)
	}
	mustRun(t, ctx, cmd("kv", "put", "app/a", "two")...)
	r := run(ctx, nil, "", cmd("kv", "get", "app/a", "-v")...)
	rev := regexp.MustCompile(`revision (\d+)`).FindStringSubmatch(r.stderr)
	if r.code != 0 || r.stdout != "two" || rev == nil {
		t.Fatalf("get -v = %+v", r)
	}
	t.Run("history and reads at a revision", func(t *testing.T) {
		h := mustRun(t, ctx, cmd("kv", "history", "app/a")...)
		if !strings.Contains(h, "put") || !strings.Contains(h, "one") || !strings.Contains(h, "two") {
			t.Fatalf("history =\n%s", h)
		}
		prev := mustRun(t, ctx, cmd("kv", "get", "app/a", "--revision", rev[1])...)
		if prev != "two" {
			t.Fatalf("get --revision %s = %q", rev[1], prev)
		}
	})
	t.Run("transactions", func(t *testing.T) {
		out := mustRun(t, ctx, cmd("kv", "txn", "--if", "{c}/n=0", "--then", "put {c}/n 1", "--then", "put {c}/m hello world", "--else", "get {c}/n")...)
		if !strings.HasPrefix(out, "then ran") || !strings.Contains(out, "put {c}/m: version 1") {
			t.Fatalf("txn = %q", out)
		}
		out = mustRun(t, ctx, cmd("kv", "txn", "--if-value", "{c}/n=9", "--then", "delete {c}/n", "--else", "get {c}/m")...)
		if !strings.HasPrefix(out, "else ran") || !strings.Contains(out, "hello world") {
			t.Fatalf("failing txn = %q", out)
		}
		r := run(ctx, nil, "", cmd("kv", "txn", "--then", "put x 1", "--then", "put y 1", "--then", "put z 1", "--then", "put w 1")...)
		if r.code == 0 || !strings.Contains(r.stderr, "partition") {
			t.Fatalf("txn across partitions = %+v", r)
		}
		if r := run(ctx, nil, "", cmd("kv", "txn", "--then", "frob x")...); r.code != 2 {
			t.Fatalf("bad operation = %+v, want a usage error", r)
		}
	})
	t.Run("leases", func(t *testing.T) {
		id := strings.TrimSpace(mustRun(t, ctx, cmd("kv", "lease", "grant", "30s")...))
		mustRun(t, ctx, cmd("kv", "put", "app/svc", "up", "--lease", id)...)
		if out := mustRun(t, ctx, cmd("kv", "lease", "keepalive", id)...); !strings.Contains(out, "renewed") {
			t.Fatalf("keepalive = %q", out)
		}
		if out := mustRun(t, ctx, cmd("kv", "lease", "info", id)...); !strings.Contains(out, "ttl 30s") {
			t.Fatalf("info = %q", out)
		}
		mustRun(t, ctx, cmd("kv", "lease", "revoke", id)...)
		if r := run(ctx, nil, "", cmd("kv", "get", "app/svc")...); r.code == 0 {
			t.Fatalf("key outlived its revoked lease: %+v", r)
		}
		if r := run(ctx, nil, "", cmd("kv", "put", "app/t", "x", "--ttl", "1ms")...); r.code == 0 || !strings.Contains(r.stderr, "ttl") {
			t.Fatalf("put --ttl 1ms = %+v", r)
		}
	})
	if code := stopWatchAfter(t, watchOut, watchErr, stopWatch, 4); code != 0 {
		t.Fatalf("watch exit %d, stderr %s", code, watchErr)
	}
	lines := strings.Split(strings.TrimSpace(watchOut.String()), "\n")
	want := []string{"put app/a one", "put app/a two", "put app/svc up", "delete app/svc"}
	for i, w := range want {
		if i >= len(lines) || !strings.HasSuffix(lines[i], w) {
			t.Fatalf("watch printed %q, want lines ending %q", lines, want)
		}
	}
}

// stopWatchAfter waits for n lines of a watch with --count n, then stops it.
func stopWatchAfter(t *testing.T, out, errOut *syncBuffer, stop func() int, n int) int {
	t.Helper()
	waitFor(t, out, errOut, regexp.MustCompile(`(?s)(.*\n){`+strconv.Itoa(n)+`}`), 30*time.Second)
	return stop()
}

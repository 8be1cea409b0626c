package testcluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// limitCase is one limit of docs/LIMITS.md: call at the limit succeeds, one
// byte past it fails with status.
type limitCase struct {
	name   string
	status int
	limit  int
	call   func(ctx context.Context, cl *client.Client, n int) error
}

// Every limit of docs/LIMITS.md holds exactly at its boundary: a value at the
// limit is accepted, one byte more is refused with 400 or 413, and the
// refused call stores nothing.
func TestLimits_ProductLimitsHoldAtTheBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	cl := c.Client(1)
	ctx := apiCtx(t)
	if _, err := cl.CreateRoom(ctx, client.RoomSpec{Name: "limits"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateQueue(ctx, "limits"); err != nil {
		t.Fatal(err)
	}
	name := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	registered := 0
	cases := []limitCase{
		{"message text 4 KiB", 413, 4096, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.Post(ctx, "limits", strings.Repeat("é", n/2)+strings.Repeat("a", n%2), client.PostOptions{})
			return err
		}},
		{"queue body 64 KiB", 413, 64 << 10, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.Send(ctx, "limits", strings.Repeat("b", n), client.SendOptions{})
			return err
		}},
		{"KV key 1 KiB", 413, 1 << 10, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.KVPut(ctx, strings.Repeat("k", n), []byte("v"), client.PutOptions{})
			return err
		}},
		{"KV value 1 MiB", 413, 1 << 20, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.KVPut(ctx, "big", []byte(strings.Repeat("v", n)), client.PutOptions{})
			return err
		}},
		{"room name 64", 400, 64, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.CreateRoom(ctx, client.RoomSpec{Name: name("Room_.-9", n)})
			return err
		}},
		{"queue name 64", 400, 64, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.CreateQueue(ctx, name("Queue_.-9", n))
			return err
		}},
		{"username 32", 400, 32, func(ctx context.Context, _ *client.Client, n int) error {
			registered++
			_, err := anonAt(c, 0).Register(ctx, name(fmt.Sprintf("U%d_.-", registered), n), "password1")
			return err
		}},
		{"password at most 256", 400, 256, func(ctx context.Context, _ *client.Client, n int) error {
			registered++
			_, err := anonAt(c, 0).Register(ctx, fmt.Sprintf("long%d", registered), strings.Repeat("p", n))
			return err
		}},
		{"link URL 2 KiB", 413, 2048, func(ctx context.Context, cl *client.Client, n int) error {
			_, err := cl.CreateLink(ctx, name("https://example.com/", n), client.LinkOptions{})
			return err
		}},
	}
	for _, lc := range cases {
		t.Run(lc.name, func(t *testing.T) {
			if err := lc.call(apiCtx(t), cl, lc.limit); err != nil {
				t.Fatalf("at the limit (%d): %v", lc.limit, err)
			}
			before := stateSums(t, c)
			err := lc.call(apiCtx(t), cl, lc.limit+1)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != lc.status {
				t.Fatalf("one past the limit (%d): %v, want %d", lc.limit+1, err, lc.status)
			}
			after := stateSums(t, c)
			for g, sum := range before {
				if after[g] != sum {
					t.Fatalf("group %d changed although the call was refused", g)
				}
			}
		})
	}
	// The lower bounds: an empty name and a 7-byte password.
	if _, err := anonAt(c, 0).Register(ctx, "shorty", "1234567"); !isStatus(err, 400) {
		t.Errorf("7-byte password: %v, want 400", err)
	}
	if _, err := anonAt(c, 0).Register(ctx, "shorty", "12345678"); err != nil {
		t.Errorf("8-byte password: %v", err)
	}
	for _, bad := range []string{"", "a b", "é", "a/b", "a:b"} {
		if _, err := cl.CreateRoom(ctx, client.RoomSpec{Name: bad}); !isStatus(err, 400) && !isStatus(err, 404) {
			t.Errorf("room name %q: %v, want 400", bad, err)
		}
	}
}

// isStatus reports whether err is a *client.Error with the status.
func isStatus(err error, status int) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == status
}

// A client that trickles its request headers (slowloris) is cut off by the
// server's header timeout while the node keeps serving others, and a header
// past MaxHeaderBytes gets 431.
func TestHardening_SlowHeadersAreCutOffAndHugeHeadersRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 1, 1)
	addr := c.Node(0).HTTPAddr()

	t.Run("slowloris", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
		// The server must close the connection although a byte arrives
		// every 100 ms; give it far more than its header timeout.
		deadline := time.Now().Add(60 * time.Second)
		closed := make(chan string, 1)
		go func() { // what the server sends before it closes: nothing, or a 4xx
			got, _ := io.ReadAll(conn)
			closed <- string(got)
		}()
		for sent := 0; ; sent++ {
			select {
			case got := <-closed:
				if got != "" && !strings.HasPrefix(got, "HTTP/1.1 4") {
					t.Fatalf("the server answered a request whose headers never ended: %q", got)
				}
				t.Logf("cut off after %d trickled bytes (%q)", sent, strings.SplitN(got, "\r\n", 2)[0])
				if err := anonAt(c, 0).Healthz(apiCtx(t)); err != nil {
					t.Fatalf("the node stopped serving: %v", err)
				}
				return
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("a client trickling its headers held its connection open for a minute")
			}
			if _, err := conn.Write([]byte("X")); err != nil {
				t.Logf("cut off after %d trickled bytes (write: %v)", sent, err)
				return
			}
		}
	})

	t.Run("oversize header", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"
		go func() { _, _ = conn.Write([]byte(req)) }() // the server may stop reading early
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a 1 MiB header: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("1 MiB header: %d, want 431", resp.StatusCode)
		}
		if err := anonAt(c, 0).Healthz(apiCtx(t)); err != nil {
			t.Fatalf("the node stopped serving: %v", err)
		}
	})
}

package api

import (
	"bufio"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// kvFrame is what the kv frames of a stream carry.
type kvFrame struct {
	Type   string           `json:"type"`
	KV     string           `json:"kv"`
	Token  string           `json:"token"`
	Code   string           `json:"code"`
	Events []stream.KVEvent `json:"events"`
}

func nextKV(t *testing.T, c *websocket.Conn) kvFrame {
	t.Helper()
	var f kvFrame
	readFrame(t, c, &f)
	return f
}

func TestStream_KVSubscriptions(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	tok := e.signUp(t, "alice")
	put := func(key, value string) {
		t.Helper()
		if w := e.call(t, tok, http.MethodPut, "/api/v1/kv/"+key, value); w.Code != http.StatusOK {
			t.Fatalf("put %s = %d %s", key, w.Code, w.Body)
		}
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+tok)
	send(t, c, `{"type":"subscribe","kv":{"id":"w","prefix":"cfg/"}}`)
	ready := nextKV(t, c)
	if ready.Type != stream.TypeKVReady || ready.KV != "w" || ready.Token == "" {
		t.Fatalf("first frame = %+v, want kv_ready of w", ready)
	}
	put("other/x", "no")
	put("cfg/a", "1")
	ev := nextKV(t, c)
	if ev.Type != stream.TypeKVEvent || ev.KV != "w" || len(ev.Events) != 1 || ev.Events[0].Key != "cfg/a" || string(ev.Events[0].Value) != "1" {
		t.Fatalf("event frame = %+v", ev)
	}

	t.Run("resume from the ready token on a new connection", func(t *testing.T) {
		c2 := e.mustDial(t, "", "Authorization", "Bearer "+tok)
		send(t, c2, `{"type":"subscribe","kv":{"prefix":"cfg/","after":"`+ready.Token+`"}}`)
		if f := nextKV(t, c2); f.Type != stream.TypeKVReady || f.KV != "cfg/" {
			t.Fatalf("first frame = %+v, want kv_ready named by the prefix", f)
		}
		// The same event; the token may differ in partitions with no
		// matching key (the live feed may have seen other/x first).
		if f := nextKV(t, c2); f.Type != stream.TypeKVEvent || len(f.Events) != 1 || f.Events[0].Key != "cfg/a" ||
			f.Events[0].Revision != ev.Events[0].Revision || f.Token == "" {
			t.Fatalf("resumed event = %+v, want cfg/a at revision %d", f, ev.Events[0].Revision)
		}
	})
	t.Run("a key watch beside rooms, unsubscribed", func(t *testing.T) {
		send(t, c, `{"type":"subscribe","kv":{"key":"cfg/b"}}`)
		if f := nextKV(t, c); f.Type != stream.TypeKVReady || f.KV != "cfg/b" {
			t.Fatalf("frame = %+v", f)
		}
		send(t, c, `{"type":"unsubscribe","kv":{"id":"w"}}`)
		// Frames are applied in order: once c's ready comes, w is gone.
		send(t, c, `{"type":"subscribe","kv":{"key":"cfg/c"}}`)
		if f := nextKV(t, c); f.Type != stream.TypeKVReady || f.KV != "cfg/c" {
			t.Fatalf("frame = %+v", f)
		}
		put("cfg/a", "2") // nothing for w any more
		put("cfg/b", "1")
		if f := nextKV(t, c); f.KV != "cfg/b" || f.Events[0].Key != "cfg/b" {
			t.Fatalf("frame = %+v, want only cfg/b's watch", f)
		}
	})
	t.Run("bad subscriptions get error frames", func(t *testing.T) {
		for frame, code := range map[string]string{
			`{"type":"subscribe","kv":{"key":"a","prefix":"b"}}`:           "invalid",
			`{"type":"subscribe","kv":{"id":"x"}}`:                         "invalid",
			`{"type":"subscribe","room":"r","kv":{"key":"a"}}`:             "invalid",
			`{"type":"subscribe","kv":{"id":"t","prefix":"","after":"z"}}`: "invalid",
			`{"type":"subscribe","kv":{"id":"t","key":"k","after":"9:1"}}`: "invalid",
		} {
			send(t, c, frame)
			if f := nextKV(t, c); f.Type != "error" || f.Code != code {
				t.Errorf("%s: frame %+v, want error %s", frame, f, code)
			}
		}
	})
}

func TestKVWatchSSE_HoldsAStreamSlot(t *testing.T) {
	e := newStreamEnvWith(t, stream.Config{}, envOptions{limits: ratelimit.Config{Slots: map[string]int{ratelimit.Streams: 1}}})
	tok := e.signUp(t, "alice")
	open := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/kv/watch?prefix=", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	first := open()
	line, err := bufio.NewReader(first.Body).ReadString('\n')
	if first.StatusCode != http.StatusOK || first.Header.Get("Content-Type") != "text/event-stream" || err != nil || line == "" {
		t.Fatalf("first watch = %d %q %v", first.StatusCode, line, err)
	}
	if second := open(); second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second watch = %d, want 429 while the first holds the slot", second.StatusCode)
	}
	first.Body.Close()
	poll.Until(t, 10*time.Second, "the slot back", func() error {
		r := open()
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", r.StatusCode)
		}
		return nil
	})
	for _, q := range []string{"", "?key=", "?key=a&prefix=b", "?prefix=a&after=x"} {
		w := e.call(t, tok, http.MethodGet, "/api/v1/kv/watch"+q, "")
		mustErrorBody(t, w, http.StatusBadRequest, "invalid")
	}
}

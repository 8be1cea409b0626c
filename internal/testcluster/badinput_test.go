package testcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/testcluster"
)

// badRequest is one refused request of the bad-input table.
type badRequest struct {
	name         string
	method, path string
	header       map[string]string
	body         string
	anonymous    bool   // send no token
	status       int    // the 4xx wanted
	code         string // the error code wanted
	names        string // what the error message must mention (case-insensitive)
}

// rawCall sends one request to addr and returns the status, the decoded
// error body (zero when the response was not a JSON error) and the raw body.
func rawCall(t *testing.T, addr, token string, br badRequest) (int, client.Error, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, br.method, "http://"+addr+br.path, strings.NewReader(br.body))
	if err != nil {
		t.Fatalf("%s: %v", br.name, err)
	}
	if br.body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range br.header {
		req.Header.Set(k, v)
	}
	if !br.anonymous {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", br.name, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	return resp.StatusCode, client.Error{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message, Retryable: body.Error.Retryable}, string(raw)
}

// stateSums returns the state checksum of every group, read on node 0 once
// every replica of it has applied the same index (VerifyReplicas).
func stateSums(t *testing.T, c *testcluster.Cluster) map[uint64]uint64 {
	t.Helper()
	c.VerifyReplicas(30 * time.Second)
	sums := map[uint64]uint64{}
	for _, g := range c.Node(0).Map().Groups {
		if g.ID == placement.MetaGroup {
			// The cluster writes its metadata by itself (placement,
			// leader balance, node health); no user request reaches it.
			continue
		}
		_, sum, err := c.Node(0).DB().Checksum(g.ID)
		if err != nil {
			t.Fatalf("checksum of group %d: %v", g.ID, err)
		}
		sums[g.ID] = sum
	}
	return sums
}

// seedBadInput fills a cluster with one of everything the bad requests aim
// at: a room with a message, a queue with a message, a key, a link.
func seedBadInput(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	cl := c.Client(0)
	ctx := apiCtx(t)
	steps := []func() error{
		func() error { _, err := cl.CreateRoom(ctx, client.RoomSpec{Name: "general"}); return err },
		func() error { _, err := cl.Post(ctx, "general", "hello", client.PostOptions{}); return err },
		func() error { _, err := cl.CreateQueue(ctx, "jobs"); return err },
		func() error { _, err := cl.Send(ctx, "jobs", "job 1", client.SendOptions{}); return err },
		func() error { _, err := cl.KVPut(ctx, "k", []byte("v"), client.PutOptions{}); return err },
		func() error {
			_, err := cl.CreateLink(ctx, "https://example.com/", client.LinkOptions{Code: "home"})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("seed step %d: %v", i, err)
		}
	}
}

// badRequests is the table: every request is refused with a 4xx whose JSON
// error names what was wrong.
func badRequests() []badRequest {
	long := func(n int) string { return strings.Repeat("a", n) }
	post := func(body string) badRequest {
		return badRequest{method: "POST", path: "/api/v1/rooms/general/messages", body: body}
	}
	send := func(body string) badRequest {
		return badRequest{method: "POST", path: "/api/v1/queues/jobs/messages", body: body}
	}
	recv := func(body string) badRequest {
		return badRequest{method: "POST", path: "/api/v1/queues/jobs/receive", body: body}
	}
	link := func(body string) badRequest { return badRequest{method: "POST", path: "/api/v1/links", body: body} }
	user := func(body string) badRequest {
		return badRequest{method: "POST", path: "/api/v1/users", body: body, anonymous: true}
	}
	with := func(b badRequest, name string, status int, code, names string) badRequest {
		b.name, b.status, b.code, b.names = name, status, code, names
		return b
	}
	return []badRequest{
		// Bodies that are not one JSON object of known fields.
		with(user(`{"username":`), "register: truncated JSON", 400, "invalid", "JSON"),
		with(user(`{"username":"x" "password":"y"}`), "register: malformed JSON", 400, "invalid", "JSON"),
		with(user(`[1,2]`), "register: an array", 400, "invalid", "object"),
		with(user(`{"username":"mallory","password":"password1","admin":true}`), "register: unknown field", 400, "invalid", "admin"),
		with(user(`{"username":7,"password":"password1"}`), "register: wrong type", 400, "invalid", "username"),
		with(user(`{"username":"mallory","password":"password1"} {}`), "register: trailing data", 400, "invalid", "after"),
		with(user(`{"username":"`+long(9000)+`","password":"password1"}`), "register: oversize body", 413, "too_large", ""),
		// Names and passwords.
		with(user(`{"username":"bad name","password":"password1"}`), "register: bad username", 400, "invalid", "username"),
		with(user(`{"username":"","password":"password1"}`), "register: empty username", 400, "invalid", "username"),
		with(user(`{"username":"`+long(33)+`","password":"password1"}`), "register: username too long", 400, "invalid", "username"),
		with(user(`{"username":"mallory","password":"short"}`), "register: password too short", 400, "invalid", "password"),
		with(user(`{"username":"mallory","password":"`+long(257)+`"}`), "register: password too long", 400, "invalid", "password"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"no spaces"}`}, "room: bad name", 400, "invalid", "name"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"` + long(65) + `"}`}, "room: name too long", 400, "invalid", "name"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":""}`}, "room: empty name", 400, "invalid", "name"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"r1","max_members":-1}`}, "room: negative max_members", 400, "invalid", "max_members"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"r1","max_members":"ten"}`}, "room: max_members a string", 400, "invalid", "max_members"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"r1","private":true}`}, "room: private without password", 400, "invalid", "password"),
		with(badRequest{method: "POST", path: "/api/v1/rooms", body: `{"name":"r1","private":true,"password":"short"}`}, "room: password too short", 400, "invalid", "password"),
		with(badRequest{method: "POST", path: "/api/v1/queues", body: `{"name":"a/b"}`}, "queue: bad name", 400, "invalid", "name"),
		with(badRequest{method: "POST", path: "/api/v1/queues", body: `{"name":"` + long(65) + `"}`}, "queue: name too long", 400, "invalid", "name"),
		// Posts.
		with(post(`{"text":""}`), "post: empty text", 400, "invalid", "text"),
		with(post(`{"text":123}`), "post: text a number", 400, "invalid", "text"),
		with(post(`{"text":"`+long(4097)+`"}`), "post: text over 4 KiB", 413, "too_large", "text"),
		with(post(`{"text":"`+strings.Repeat(`\u0041`, 4097)+`"}`), "post: escaped text over 4 KiB", 413, "too_large", "text"),
		with(post(`{"text":"hi","to":["bad name"]}`), "post: bad recipient", 400, "invalid", "to"),
		with(post(`{"text":"hi","to":"ann"}`), "post: to not an array", 400, "invalid", "to"),
		with(post(`{"text":"hi","color":"red"}`), "post: unknown field", 400, "invalid", "color"),
		with(post(`{"text":"`+long(200_000)+`"}`), "post: oversize body", 413, "too_large", ""),
		with(post(`{"text":"hi","request_id":"a"}`), "post: request_id differs from Idempotency-Key", 400, "invalid", "request_id"),
		with(post(`{"text":"hi"}`), "post: Idempotency-Key too long", 400, "invalid", "idempotency"),
		with(post(`{"text":"hi","request_id":"`+long(300)+`"}`), "post: request_id too long", 400, "invalid", "idempotency"),
		with(badRequest{method: "POST", path: "/api/v1/rooms/no%20room/messages", body: `{"text":"hi"}`}, "post: bad room name", 400, "invalid", "room"),
		with(badRequest{method: "POST", path: "/api/v1/rooms/general/read", body: `{}`}, "read: seq missing", 400, "invalid", "seq"),
		with(badRequest{method: "POST", path: "/api/v1/rooms/general/read", body: `{"seq":-1}`}, "read: negative seq", 400, "invalid", "seq"),
		// Query parameters.
		with(badRequest{method: "GET", path: "/api/v1/rooms/general/messages?after=-1"}, "history: negative after", 400, "invalid", "after"),
		with(badRequest{method: "GET", path: "/api/v1/rooms/general/messages?before=abc"}, "history: before not a number", 400, "invalid", "before"),
		with(badRequest{method: "GET", path: "/api/v1/rooms/general/messages?limit=0"}, "history: limit 0", 400, "invalid", "limit"),
		with(badRequest{method: "GET", path: "/api/v1/rooms/general/messages?limit=501"}, "history: limit too high", 400, "invalid", "limit"),
		with(badRequest{method: "GET", path: "/api/v1/rooms/general/messages?consistency=eventual"}, "history: bad consistency", 400, "invalid", "consistency"),
		with(badRequest{method: "GET", path: "/api/v1/queues?waiting=maybe"}, "queues: bad waiting", 400, "invalid", "waiting"),
		with(badRequest{method: "GET", path: "/api/v1/queues/jobs/peek?from=bad%20name"}, "peek: bad from", 400, "invalid", "from"),
		with(badRequest{method: "GET", path: "/api/v1/kv?limit=lots"}, "kv list: bad limit", 400, "invalid", "limit"),
		// Queue sends, receives and acks.
		with(send(`{}`), "send: body missing", 400, "invalid", "body"),
		with(send(`{"body":5}`), "send: body a number", 400, "invalid", "body"),
		with(send(`{"body":"`+long(64<<10+1)+`"}`), "send: body over 64 KiB", 413, "too_large", "body"),
		with(send(`{"body":"x","to":"bad name"}`), "send: bad receiver", 400, "invalid", "to"),
		with(recv(`{"ack_timeout_ms":-1}`), "receive: negative ack_timeout_ms", 400, "invalid", "ack_timeout_ms"),
		with(recv(`{"ack_timeout_ms":99999999999999}`), "receive: huge ack_timeout_ms", 400, "invalid", "ack_timeout_ms"),
		with(recv(`{"ack_timeout_ms":1.5}`), "receive: fractional ack_timeout_ms", 400, "invalid", "ack_timeout_ms"),
		with(recv(`{"wait_ms":-5}`), "receive: negative wait_ms", 400, "invalid", "wait_ms"),
		with(recv(`{"from":"bad name"}`), "receive: bad from", 400, "invalid", "from"),
		with(badRequest{method: "POST", path: "/api/v1/queues/jobs/ack", body: `{}`}, "ack: receipt missing", 400, "invalid", "receipt"),
		with(badRequest{method: "POST", path: "/api/v1/queues/jobs/ack", body: `{"receipt":"!!!"}`}, "ack: garbage receipt", 409, "conflict", "receipt"),
		// KV.
		with(badRequest{method: "PUT", path: "/api/v1/kv/" + long(1025), body: "v"}, "kv: key over 1 KiB", 413, "too_large", "key"),
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: long(1<<20 + 1)}, "kv: value over 1 MiB", 413, "too_large", "body"),
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: "w", header: map[string]string{"If-Match": "abc"}}, "kv: If-Match not a version", 400, "invalid", "If-Match"),
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: "w", header: map[string]string{"If-Match": "-1"}}, "kv: negative If-Match", 400, "invalid", "If-Match"),
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: "w", header: map[string]string{"Idempotency-Key": long(300)}}, "kv: Idempotency-Key too long", 400, "invalid", "idempotency"),
		with(badRequest{method: "DELETE", path: "/api/v1/kv/k", header: map[string]string{"If-Match": "1,2"}}, "kv delete: bad If-Match", 400, "invalid", "If-Match"),
		// Links.
		with(link(`{"url":"javascript:alert(1)"}`), "link: javascript URL", 400, "invalid", "url"),
		with(link(`{"url":"data:text/html,<script>alert(1)</script>"}`), "link: data URL", 400, "invalid", "url"),
		with(link(`{"url":"ftp://example.com/"}`), "link: ftp URL", 400, "invalid", "url"),
		with(link(`{"url":"http://"}`), "link: no host", 400, "invalid", "url"),
		with(link(`{"url":"not a url"}`), "link: not a URL", 400, "invalid", "url"),
		with(link(`{"url":""}`), "link: empty URL", 400, "invalid", "url"),
		with(link(`{"url":"https://example.com/`+long(9000)+`"}`), "link: URL too long", 413, "too_large", "url"),
		with(link(`{"url":"https://example.com/","code":"a/b"}`), "link: bad code", 400, "invalid", "code"),
		with(link(`{"url":["https://example.com/"]}`), "link: url an array", 400, "invalid", "url"),
		// Credentials.
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: "w", anonymous: true}, "kv: no token", 401, "unauthorized", ""),
		with(badRequest{method: "PUT", path: "/api/v1/kv/k", body: "w", anonymous: true, header: map[string]string{"Authorization": "Bearer forged"}}, "kv: forged token", 401, "unauthorized", ""),
	}
}

// Every malformed, oversize or out-of-range request gets the right 4xx with
// a JSON error naming what was wrong, changes no stored data (every
// partition's state checksum is the same before and after), and the node keeps
// serving.
func TestBadInput_RefusedWithoutHarm(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	seedBadInput(t, c)
	token := c.Client(0).Token()
	before := stateSums(t, c)
	for i, br := range badRequests() {
		if br.name == "post: Idempotency-Key too long" {
			br.header = map[string]string{"Idempotency-Key": strings.Repeat("k", 300)}
		}
		if br.name == "post: request_id differs from Idempotency-Key" {
			br.header = map[string]string{"Idempotency-Key": "b"}
		}
		t.Run(br.name, func(t *testing.T) {
			addr := c.Node(i % 3).HTTPAddr()
			status, e, raw := rawCall(t, addr, token, br)
			if status != br.status || e.Code != br.code {
				t.Fatalf("%s %s: %d %q (%s), want %d %s", br.method, clipped(br.path), status, e.Code, clipped(raw), br.status, br.code)
			}
			if e.Retryable {
				t.Errorf("a refused request is marked retryable: %s", e.Message)
			}
			if !strings.Contains(strings.ToLower(e.Message), strings.ToLower(br.names)) {
				t.Errorf("message %q does not mention %q", e.Message, br.names)
			}
			if err := anonAt(c, i%3).Healthz(apiCtx(t)); err != nil {
				t.Fatalf("node %d stopped serving: %v", i%3+1, err)
			}
			after := stateSums(t, c)
			for g, sum := range before {
				if after[g] != sum {
					t.Errorf("group %d: state changed (checksum %x -> %x)", g, sum, after[g])
				}
			}
			before = after
		})
	}
	// The seeded data reads back, through every node.
	for i := 0; i < 3; i++ {
		if v, _, err := c.Client(i).KVGet(apiCtx(t), "k", client.GetOptions{}); err != nil || string(v) != "v" {
			t.Fatalf("k = %q, %v via n%d", v, err, i+1)
		}
	}
}

// clipped shortens long paths and bodies in failure messages.
func clipped(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%s... (%d bytes)", s[:120], len(s))
	}
	return s
}

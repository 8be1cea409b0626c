package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/stream"
)

// sentWireFrame is what a sent frame, or a send's error frame, carries.
type sentWireFrame struct {
	Type      string `json:"type"`
	Queue     string `json:"queue"`
	ID        string `json:"id"`
	MessageID uint64 `json:"message_id"`
	Ts        int64  `json:"ts"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

// Messages sent over the stream are answered, in order, by sent frames
// naming each send's id once durable; a send again with an id already
// used is not sent twice; a bad send gets its error frame naming the
// problem and sends nothing; a token without write on the queue is
// refused.
func TestStream_QueueSend(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice := e.signUp(t, "alice")
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
	for i := range 3 {
		send(t, c, fmt.Sprintf(`{"type":"send","queue":{"name":"jobs"},"id":"s%d","message":{"body":"m%d","priority":1}}`, i, i))
	}
	var ids []uint64
	for i := range 3 {
		var f sentWireFrame
		readFrame(t, c, &f)
		if f.Type != stream.TypeSent || f.Queue != "jobs" || f.ID != fmt.Sprintf("s%d", i) || f.MessageID == 0 || f.Ts == 0 {
			t.Fatalf("answer %d = %+v, want sent s%d", i, f, i)
		}
		ids = append(ids, f.MessageID)
	}
	if ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Fatalf("message ids %v, want them in send order", ids)
	}
	send(t, c, `{"type":"send","queue":{"name":"jobs"},"id":"s1","message":{"body":"m1","priority":1}}`)
	var again sentWireFrame
	readFrame(t, c, &again)
	if again.Type != stream.TypeSent || again.ID != "s1" || again.MessageID != ids[1] {
		t.Fatalf("the retry of s1 = %+v, want message %d again", again, ids[1])
	}
	for _, tc := range []struct{ frame, code, id string }{
		{`{"type":"send","queue":{"name":"jobs"},"id":"b1","message":{}}`, "invalid", "b1"},
		{`{"type":"send","queue":{"name":"jobs"},"id":"b2","message":{"body":"x","colour":"red"}}`, "invalid", "b2"},
		{`{"type":"send","queue":{"name":"jobs"},"id":"b3","message":{"body":"x","priority":11}}`, "invalid", "b3"},
		{`{"type":"send","queue":{"name":"jobs"},"id":"b4","message":{"body":"` + strings.Repeat("x", 64<<10+1) + `"}}`, "too_large", "b4"},
		{`{"type":"send","queue":{"name":"nope"},"id":"b5","message":{"body":"x"}}`, "not_found", "b5"},
		{`{"type":"send","queue":{"name":"jobs"},"message":{"body":"x"}}`, "invalid", ""},
		{`{"type":"send","queue":{"name":"jobs"},"id":"b7"}`, "invalid", ""},
	} {
		send(t, c, tc.frame)
		var f sentWireFrame
		readFrame(t, c, &f)
		if f.Type != "error" || f.Code != tc.code || f.ID != tc.id || f.Message == "" {
			t.Fatalf("%.80s: answer = %+v, want %s error for %q", tc.frame, f, tc.code, tc.id)
		}
	}
	if msgs, _ := queueCounts(t, e, alice, "jobs"); msgs != 3 {
		t.Fatalf("%d messages in the queue, want the 3 sent once each", msgs)
	}
	read := mustAPIToken(t, e.fullEnv, alice, `{"name":"r","scopes":["read"]}`)
	cr := e.mustDial(t, "", "Authorization", "Bearer "+read.Token)
	send(t, cr, `{"type":"send","queue":{"name":"jobs"},"id":"r1","message":{"body":"x"}}`)
	var f sentWireFrame
	readFrame(t, cr, &f)
	if f.Type != "error" || f.Code != "forbidden" || f.ID != "r1" {
		t.Fatalf("a read token's send = %+v, want forbidden", f)
	}
	if msgs, _ := queueCounts(t, e, alice, "jobs"); msgs != 3 {
		t.Fatalf("%d messages in the queue after the refusals, want 3", msgs)
	}
}

package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/stream"
)

// testStreams is a StreamService over a Hub fed from the chat replicator:
// what the node does, minus Raft. publish hands the room's new events over.
type testStreams struct {
	rep *statetest.Replicator
	hub *stream.Hub

	mu  sync.Mutex
	pos map[string]uint64
}

func newTestStreams(t *testing.T, cfg stream.Config) *testStreams {
	s := &testStreams{pos: map[string]uint64{}}
	cfg.Source = s
	s.hub = stream.NewHub(cfg)
	t.Cleanup(s.hub.Close)
	return s
}

func (s *testStreams) Watch(string)   {}
func (s *testStreams) Unwatch(string) {}

func (s *testStreams) EventsAfter(ctx context.Context, room string, after uint64, limit int) ([]chat.Event, error) {
	var events []chat.Event
	_, err := s.rep.Read(ctx, s.rep.PartitionOf(room), true, func(r state.Reader) error {
		var err error
		events, err = chat.EventsAfter(r, room, after, limit)
		return err
	})
	return events, err
}

func (s *testStreams) Connect(user string) *stream.Subscriber { return s.hub.Connect(user) }
func (s *testStreams) Disconnect(sub *stream.Subscriber)      { s.hub.Disconnect(sub) }
func (s *testStreams) Unsubscribe(sub *stream.Subscriber, room string) {
	s.hub.Unsubscribe(sub, strings.ToLower(room))
}

func (s *testStreams) Subscribe(ctx context.Context, sub *stream.Subscriber, room string, after *uint64) (string, error) {
	name, err := chat.CanonicalRoom(room)
	if err != nil {
		return room, err
	}
	var rm chat.Room
	if _, err := s.rep.Read(ctx, s.rep.PartitionOf(name), false, func(r state.Reader) error {
		rm, err = chat.CheckRead(r, name, sub.User())
		return err
	}); err != nil {
		return name, err
	}
	from := rm.LastSeq
	if after != nil {
		from = *after
	}
	s.hub.Subscribe(sub, name, from)
	s.publish(name)
	return name, nil
}

func (s *testStreams) SubscribeInbox(ctx context.Context, sub *stream.Subscriber) error {
	inbox := chat.InboxName(sub.User())
	var rm chat.Room
	if _, err := s.rep.Read(ctx, s.rep.PartitionOf(inbox), false, func(r state.Reader) (err error) {
		rm, _, err = chat.GetRoom(r, inbox)
		return err
	}); err != nil {
		return err
	}
	s.hub.Subscribe(sub, inbox, rm.LastSeq)
	s.publish(inbox)
	return nil
}

func (s *testStreams) Typing(sub *stream.Subscriber, room string) {
	if frame := s.hub.Typing(sub, strings.ToLower(room)); frame != nil {
		s.hub.SendRoom(strings.ToLower(room), frame)
	}
}

// publish hands room's events after the last published one to the Hub.
func (s *testStreams) publish(room string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		events, err := s.EventsAfter(context.Background(), room, s.pos[room], 256)
		if err != nil || len(events) == 0 {
			s.hub.Advance(room, s.pos[room])
			return
		}
		s.hub.Publish(room, events)
		s.pos[room] = events[len(events)-1].Seq
	}
}

// streamEnv is a full API served over a real listener, with streams.
type streamEnv struct {
	*fullEnv
	streams *testStreams
	srv     *httptest.Server
}

func newStreamEnv(t *testing.T, hubCfg stream.Config) *streamEnv {
	t.Helper()
	return newStreamEnvWith(t, hubCfg, envOptions{})
}

// newStreamEnvWith is newStreamEnv with the environment's options; their
// Streams and StreamOrigins are set here.
func newStreamEnvWith(t *testing.T, hubCfg stream.Config, o envOptions) *streamEnv {
	t.Helper()
	ts := newTestStreams(t, hubCfg)
	o.cfg.Streams = ts
	o.cfg.StreamOrigins = func() []string { return []string{"10.0.0.7:7070", "https://chat.example.com"} }
	e := newFullEnv(t, o)
	ts.rep = e.RoomRep
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	return &streamEnv{fullEnv: e, streams: ts, srv: srv}
}

// dial opens a stream; headers alternate name, value.
func (e *streamEnv) dial(t *testing.T, query string, headers ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/api/v1/stream"+query, &websocket.DialOptions{HTTPHeader: h})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// mustDial opens a stream or fails.
func (e *streamEnv) mustDial(t *testing.T, query string, headers ...string) *websocket.Conn {
	t.Helper()
	c, _, err := e.dial(t, query, headers...)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// room creates room as token's user and posts n messages.
func (e *streamEnv) room(t *testing.T, token, room string, private bool, n int) {
	t.Helper()
	body := `{"name":"` + room + `"}`
	if private {
		body = `{"name":"` + room + `","private":true,"password":"open sesame"}`
	}
	if w := e.call(t, token, http.MethodPost, "/api/v1/rooms", body); w.Code != http.StatusCreated {
		t.Fatalf("create room = %d %s", w.Code, w.Body)
	}
	e.post(t, token, room, n)
}

func (e *streamEnv) post(t *testing.T, token, room string, n int) {
	t.Helper()
	for range n {
		if w := e.call(t, token, http.MethodPost, "/api/v1/rooms/"+room+"/messages", `{"text":"hello"}`); w.Code != http.StatusCreated {
			t.Fatalf("post = %d %s", w.Code, w.Body)
		}
	}
}

type wireFrame struct {
	Type string `json:"type"`
	Room string `json:"room"`
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	Code string `json:"code"`
}

// next reads one frame.
func next(t *testing.T, c *websocket.Conn) wireFrame {
	t.Helper()
	var f wireFrame
	readFrame(t, c, &f)
	return f
}

// readFrame reads one frame into f.
func readFrame(t *testing.T, c *websocket.Conn, f any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read a frame: %v", err)
	}
	if err := json.Unmarshal(b, f); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
}

func send(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// closedWith reads until the connection ends and returns its close status.
func closedWith(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestStream_Auth(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	token := e.signUp(t, "alice")
	e.room(t, token, "lobby", false, 3)

	t.Run("header", func(t *testing.T) {
		c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+token)
		if f := next(t, c); f.Type != stream.TypeReady || f.Seq != 4 { // join + 3 posts
			t.Fatalf("first frame %+v, want ready(4)", f)
		}
	})
	t.Run("first frame", func(t *testing.T) {
		c := e.mustDial(t, "?after=lobby:1")
		send(t, c, `{"type":"auth","token":"`+token+`"}`)
		for seq := uint64(2); seq <= 4; seq++ {
			if f := next(t, c); f.Type != stream.TypeEvent || f.Seq != seq {
				t.Fatalf("frame %+v, want event %d", f, seq)
			}
		}
		if f := next(t, c); f.Type != stream.TypeReady || f.Seq != 4 {
			t.Fatalf("frame %+v, want ready(4)", f)
		}
	})
	for _, tc := range []struct{ name, frame string }{
		{"bad token in the first frame", `{"type":"auth","token":"nope"}`},
		{"first frame not auth", `{"type":"subscribe","room":"lobby"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.mustDial(t, "")
			send(t, c, tc.frame)
			if f := next(t, c); f.Type != stream.TypeError || f.Code != stream.CodeUnauthorized {
				t.Fatalf("frame %+v, want an unauthorized error", f)
			}
			if st := closedWith(t, c); st != closeUnauthorized {
				t.Fatalf("closed with %d, want %d", st, closeUnauthorized)
			}
		})
	}
	refused := []struct {
		name    string
		query   string
		headers []string
		status  int
	}{
		{"bad header token", "", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"token in the URL", "?token=" + token, nil, http.StatusBadRequest},
		{"access_token in the URL", "?rooms=lobby&access_token=" + token, []string{"Authorization", "Bearer " + token}, http.StatusBadRequest},
		{"malformed after", "?after=lobby", []string{"Authorization", "Bearer " + token}, http.StatusBadRequest},
		{"foreign origin", "", []string{"Authorization", "Bearer " + token, "Origin", "https://evil.example"}, http.StatusForbidden},
		{"allowed origin with another scheme", "", []string{"Authorization", "Bearer " + token, "Origin", "http://chat.example.com"}, http.StatusForbidden},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := e.dial(t, tc.query, tc.headers...)
			if err == nil || resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("dial: %v %v, want status %d", err, resp, tc.status)
			}
		})
	}
	for _, origin := range []string{"http://10.0.0.7:7070", "https://10.0.0.7:7070", "https://chat.example.com", e.srv.URL} {
		t.Run("origin "+origin, func(t *testing.T) {
			c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+token, "Origin", origin)
			if f := next(t, c); f.Type != stream.TypeReady {
				t.Fatalf("first frame %+v, want ready", f)
			}
		})
	}
}

func TestStream_Frames(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice, bob := e.signUp(t, "alice"), e.signUp(t, "bob")
	e.room(t, alice, "vault", true, 1)
	e.room(t, alice, "lobby", false, 1)
	c := e.mustDial(t, "", "Authorization", "Bearer "+bob)
	for _, tc := range []struct{ frame, room, code string }{
		{`{"type":"subscribe","room":"vault"}`, "vault", stream.CodeForbidden},
		{`{"type":"subscribe","room":"nowhere"}`, "nowhere", stream.CodeNotFound},
		{`{"type":"subscribe","room":"bad/name"}`, "bad/name", stream.CodeInvalid},
		{`{"type":"dance"}`, "", stream.CodeInvalid},
		{`not json`, "", stream.CodeInvalid},
	} {
		send(t, c, tc.frame)
		if f := next(t, c); f.Type != stream.TypeError || f.Code != tc.code || f.Room != tc.room {
			t.Fatalf("after %s: frame %+v, want error %s for %q", tc.frame, f, tc.code, tc.room)
		}
	}
	send(t, c, `{"type":"subscribe","room":"Lobby"}`) // names ignore case; the connection survived
	if f := next(t, c); f.Type != stream.TypeReady || f.Room != "lobby" || f.Seq != 2 {
		t.Fatalf("frame %+v, want ready(lobby, 2)", f)
	}
	e.post(t, alice, "lobby", 1)
	e.streams.publish("lobby")
	if f := next(t, c); f.Type != stream.TypeEvent || f.Seq != 3 || f.Kind != chat.KindMessage {
		t.Fatalf("frame %+v, want event 3", f)
	}
	send(t, c, `{"type":"unsubscribe","room":"lobby"}`)
	send(t, c, `{"type":"subscribe","room":"nowhere"}`) // frames are applied in order
	if f := next(t, c); f.Type != stream.TypeError || f.Room != "nowhere" {
		t.Fatalf("frame %+v, want the not_found marker", f)
	}
	e.post(t, alice, "lobby", 1)
	e.streams.publish("lobby")
	send(t, c, `{"type":"subscribe","room":"nowhere"}`)
	if f := next(t, c); f.Type != stream.TypeError || f.Room != "nowhere" {
		t.Fatalf("frame %+v after unsubscribing, want only the second marker", f)
	}
}

func TestStream_SlowConsumer(t *testing.T) {
	e := newStreamEnv(t, stream.Config{MaxBytes: 64 << 10})
	alice := e.signUp(t, "alice")
	e.room(t, alice, "flood", false, 0)
	c := e.mustDial(t, "?rooms=flood", "Authorization", "Bearer "+alice)
	if f := next(t, c); f.Type != stream.TypeReady {
		t.Fatalf("first frame %+v", f)
	}
	big := strings.Repeat("x", 4000)
	// The client reads nothing while far more than the socket buffers hold
	// is published.
	for i := range 4000 {
		if w := e.call(t, alice, http.MethodPost, "/api/v1/rooms/flood/messages", `{"text":"`+big+`"}`); w.Code != http.StatusCreated {
			t.Fatalf("post = %d", w.Code)
		}
		if i%100 == 99 {
			e.streams.publish("flood")
			if e.streams.hub.Stats().Subscribers == 0 {
				break
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last wireFrame
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %d (%v), want 1008", st, err)
			}
			break
		}
		_ = json.Unmarshal(b, &last)
	}
	if last.Type != stream.TypeError || last.Code != stream.CodeSlowConsumer {
		t.Fatalf("last frame %+v, want slow_consumer", last)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.streams.hub.Stats().SlowConsumers != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want one slow consumer", e.streams.hub.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

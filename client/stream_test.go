package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// streamServer is a scripted stream endpoint: it records how the client
// signed in and what it sent, then plays frames and closes with status.
type streamServer struct {
	t      *testing.T
	frames []string
	status websocket.StatusCode
	got    chan streamHello
}

type streamHello struct {
	query, authHeader, origin string
	firstFrame                map[string]any
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/stream" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") == "Bearer bad" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"invalid or expired session token"}}`))
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	hello := streamHello{query: r.URL.RawQuery, authHeader: r.Header.Get("Authorization"), origin: r.Header.Get("Origin")}
	_, b, err := c.Read(ctx)
	if err != nil {
		return
	}
	_ = json.Unmarshal(b, &hello.firstFrame)
	s.got <- hello
	for _, f := range s.frames {
		if c.Write(ctx, websocket.MessageText, []byte(f)) != nil {
			return
		}
	}
	_ = c.Close(s.status, "bye")
}

func TestClient_Stream(t *testing.T) {
	srv := &streamServer{t: t, got: make(chan streamHello, 1), status: websocket.StatusPolicyViolation, frames: []string{
		`{"type":"event","room":"r","seq":11,"ts":5,"kind":"message","sender":"alice","text":"hi"}`,
		`{"type":"event","room":"r","seq":12,"ts":6,"kind":"hidden"}`,
		`{"type":"ready","room":"r","seq":12}`,
		`{"type":"ready","room":"s","seq":40}`,
		`{"type":"error","code":"slow_consumer","message":"too slow"}`,
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("bad token", func(t *testing.T) {
		_, err := New(hs.URL, WithToken("bad")).Stream(ctx, StreamOptions{})
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != "unauthorized" {
			t.Fatalf("error %v, want a 401 unauthorized *Error", err)
		}
		if !errors.Is(err, ErrSessionEnded) {
			t.Fatalf("error %v is not ErrSessionEnded", err)
		}
	})

	s, err := New(hs.URL, WithToken("tok")).Stream(ctx, StreamOptions{
		Rooms: []string{"s"}, Resume: map[string]uint64{"R": 10}, AuthFrame: true, Origin: "https://chat.example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hello := <-srv.got
	if hello.authHeader != "" || hello.firstFrame["type"] != "auth" || hello.firstFrame["token"] != "tok" {
		t.Fatalf("signed in with header %q and first frame %v, want only the frame", hello.authHeader, hello.firstFrame)
	}
	if hello.query != "after=R%3A10&rooms=s" || hello.origin != "https://chat.example.com" {
		t.Fatalf("query %q origin %q", hello.query, hello.origin)
	}
	if pos := s.Positions(); pos["r"] != 10 {
		t.Fatalf("positions before any frame %v, want r:10", pos)
	}
	var got []Frame
	for {
		f, err := s.Next(ctx)
		if err != nil {
			var ce *StreamClosedError
			if !errors.As(err, &ce) || ce.Status != int(websocket.StatusPolicyViolation) {
				t.Fatalf("end of stream %v, want a 1008 *StreamClosedError", err)
			}
			break
		}
		got = append(got, f)
	}
	if len(got) != 5 || got[0].Event().Text != "hi" || got[1].Kind != "hidden" || got[4].Code != CodeSlowConsumer {
		t.Fatalf("frames %+v", got)
	}
	if pos := s.Positions(); pos["r"] != 12 || pos["s"] != 40 || len(pos) != 2 {
		t.Fatalf("positions %v, want r:12 s:40", pos)
	}
}

// The unauthorized frame ends the stream with ErrSessionEnded, and so does
// the close with 4001 that follows it.
func TestStream_Next(t *testing.T) {
	srv := &streamServer{t: t, got: make(chan streamHello, 1), status: CloseUnauthorized, frames: []string{
		`{"type":"ready","room":"r","seq":3}`,
		`{"type":"error","room":"r","code":"forbidden","message":"not a member"}`,
		`{"type":"error","code":"unauthorized","message":"your session ended (signed out, revoked or expired): sign in again"}`,
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(hs.URL, WithToken("tok")).Stream(ctx, StreamOptions{AuthFrame: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-srv.got
	for _, want := range []string{FrameReady, FrameError} {
		if f, err := s.Next(ctx); err != nil || f.Type != want {
			t.Fatalf("Next = (%+v, %v), want a %s frame", f, err, want)
		}
	}
	if _, err := s.Next(ctx); err != ErrSessionEnded {
		t.Fatalf("Next at the unauthorized frame = %v, want ErrSessionEnded", err)
	}
	_, err = s.Next(ctx)
	var ce *StreamClosedError
	if !errors.As(err, &ce) || ce.Status != CloseUnauthorized || !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("Next after the frame = %v, want a 4001 *StreamClosedError matching ErrSessionEnded", err)
	}
	if errors.Is(&StreamClosedError{Status: 1008}, ErrSessionEnded) {
		t.Fatal("a 1008 close matches ErrSessionEnded")
	}
}

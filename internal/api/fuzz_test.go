package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

// bodyTarget is one route's request body type with its limit.
type bodyTarget struct {
	route    string
	new      func() writeBody
	limit    int64
	optional bool
}

func bodyTargets() []bodyTarget {
	lim := newBodyLimits(0, 0, 0)
	return []bodyTarget{
		{"POST /api/v1/users", func() writeBody { return &credentials{} }, smallBody, false},
		{"POST /api/v1/rooms", func() writeBody { return &createRoomRequest{} }, smallBody, false},
		{"POST /api/v1/rooms/{room}/join", func() writeBody { return &joinRequest{} }, smallBody, true},
		{"POST /api/v1/rooms/{room}/leave", func() writeBody { return &requestOnly{} }, smallBody, true},
		{"POST /api/v1/rooms/{room}/read", func() writeBody { return &readRequest{} }, smallBody, false},
		{"POST /api/v1/rooms/{room}/messages", func() writeBody { return &postRequest{} }, lim.post.body, false},
		{"POST /api/v1/queues", func() writeBody { return &createQueueRequest{} }, smallBody, false},
		{"POST /api/v1/queues/{queue}/messages", func() writeBody { return &sendRequest{} }, lim.send.body, false},
		{"POST /api/v1/queues/{queue}/receive", func() writeBody { return &receiveRequest{} }, smallBody, true},
		{"POST /api/v1/queues/{queue}/ack", func() writeBody { return &ackRequest{} }, smallBody, false},
		{"POST /api/v1/links", func() writeBody { return &createLinkRequest{} }, lim.link.body, false},
	}
}

// Every JSON request body decoder takes any bytes without panicking. A
// refusal is errs.Invalid, or errs.TooLarge only past the route's limit. An
// accepted body is within the limit, is one JSON object (or empty where
// the body is optional), survives a strict re-encode and decode unchanged (same encoding),
// and yields the idempotency key of the header or of request_id, never two
// different ones.
func FuzzDecodeWrite(f *testing.F) {
	seeds := []string{
		`{"username":"ann","password":"password1"}`,
		`{"name":"general","private":true,"password":"secret12","max_members":5,"request_id":"r1"}`,
		`{"password":"x"}`, `{}`, ``, `{"seq":3}`, `{"text":"hi","to":["bob"]}`,
		`{"body":"job","to":"bob"}`, `{"from":"ann","ack_timeout_ms":500,"wait_ms":100}`,
		`{"receipt":"AAAA"}`, `{"url":"https://example.com/","code":"abc"}`,
		`{"text":"\u00e9\ud800"}`, `{"seq":-1}`, `{"a":1} x`, `[1]`, `{"name":"x","name":"y"}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s), "")
		f.Add(uint8(i+5), []byte(s), "key-1")
	}
	targets := bodyTargets()
	f.Fuzz(func(t *testing.T, which uint8, body []byte, header string) {
		tg := targets[int(which)%len(targets)]
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		if header != "" {
			r.Header.Set("Idempotency-Key", header)
		}
		v := tg.new()
		key, err := (&Server{}).decodeWrite(httptest.NewRecorder(), r, tg.limit, v, tg.optional)
		if err != nil {
			var e *errs.Error
			switch {
			case !errors.As(err, &e):
				t.Fatalf("%s: %q: not an *errs.Error: %v", tg.route, body, err)
			case e.Code == errs.TooLarge && int64(len(body)) <= tg.limit:
				t.Fatalf("%s: %d bytes refused as too large (limit %d)", tg.route, len(body), tg.limit)
			case e.Code != errs.TooLarge && e.Code != errs.Invalid:
				t.Fatalf("%s: %q refused with %s", tg.route, body, e.Code)
			}
			return
		}
		if int64(len(body)) > tg.limit {
			t.Fatalf("%s: accepted %d bytes over the %d limit", tg.route, len(body), tg.limit)
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 && !tg.optional || len(trimmed) > 0 && trimmed[0] != '{' {
			t.Fatalf("%s: accepted %q, not one JSON object", tg.route, body)
		}
		rid := v.requestID()
		switch {
		case header != "" && rid != "" && header != rid:
			t.Fatalf("%s: header %q and request_id %q both accepted", tg.route, header, rid)
		case header != "" && key != header, header == "" && key != rid:
			t.Fatalf("%s: key %q from header %q and request_id %q", tg.route, key, header, rid)
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: re-encode %+v: %v", tg.route, v, err)
		}
		again := tg.new()
		dec := json.NewDecoder(bytes.NewReader(enc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(again); err != nil {
			t.Fatalf("%s: %q decoded to %+v, whose encoding %s does not decode: %v", tg.route, body, v, enc, err)
		}
		if enc2, _ := json.Marshal(again); !bytes.Equal(enc2, enc) {
			t.Fatalf("%s: %q: encoding %s re-encodes as %s", tg.route, body, enc, enc2)
		}
	})
}

// Query parameters parse without panicking; accepted values are what the
// parameter documents.
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{"after=12&limit=5", "waiting=true", "consistency=stale", "after=-1", "limit=1e3", "waiting=maybe&consistency=x", "after=18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.RawQuery = query
		q := r.URL.Query()
		if v, present, err := queryUint(r, "after"); err == nil && present {
			if got := q.Get("after"); got == "" || v > 0 && got[0] == '-' {
				t.Fatalf("after=%q accepted as %d", got, v)
			}
		} else if err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("after: %v", err)
		}
		if b, err := queryBool(r, "waiting"); err == nil {
			if w := q.Get("waiting"); b != (w == "true" || w == "1") {
				t.Fatalf("waiting=%q accepted as %v", w, b)
			}
		} else if !errs.Is(err, errs.Invalid) {
			t.Fatalf("waiting: %v", err)
		}
		if stale, err := parseConsistency(r); err == nil {
			if c := q.Get("consistency"); stale != (c == "stale") {
				t.Fatalf("consistency=%q accepted as stale=%v", c, stale)
			}
		} else if !errs.Is(err, errs.Invalid) {
			t.Fatalf("consistency: %v", err)
		}
	})
}

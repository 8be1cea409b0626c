package client

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		name string
		in   string
		min  time.Duration
		max  time.Duration
	}{
		{"empty", "", 0, 0},
		{"seconds", "2", 2 * time.Second, 2 * time.Second},
		{"negative", "-1", 0, 0},
		{"huge", "99999999999999999", 24 * time.Hour, 24 * time.Hour},
		{"garbage", "soon", 0, 0},
		{"date", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 58 * time.Minute, time.Hour},
		{"past date", "Mon, 02 Jan 2006 15:04:05 GMT", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRetryAfter(tc.in); got < tc.min || got > tc.max {
				t.Fatalf("parseRetryAfter(%q) = %v, want in [%v, %v]", tc.in, got, tc.min, tc.max)
			}
		})
	}
}

func FuzzDecodeError(f *testing.F) {
	f.Add(503, []byte(`{"error":{"code":"unavailable","message":"no leader","retryable":true}}`), "1")
	f.Add(502, []byte("bad gateway"), "")
	f.Add(400, []byte(`{"error":null}`), "Mon, 02 Jan 2006 15:04:05 GMT")
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		resp.Header.Set("Retry-After", retryAfter)
		e := decodeError(resp)
		if e.Status != status || e.RetryAfter < 0 {
			t.Fatalf("decodeError = %+v", e)
		}
	})
}

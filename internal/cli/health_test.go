package cli

import (
	"context"
	"net"
	"strings"
	"testing"
)

func TestLocalNodeURL(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "http://localhost:7070"},
		{map[string]string{"PARLEY_HTTP": "0.0.0.0:8080"}, "http://localhost:8080"},
		{map[string]string{"PARLEY_HTTP": ":9000", "PARLEY_TLS_CERT": "/c.pem"}, "https://localhost:9000"},
		{map[string]string{"PARLEY_HTTP": "nonsense"}, "http://localhost:7070"},
	} {
		if got := localNodeURL(envMap(tc.env)); got != tc.want {
			t.Errorf("localNodeURL(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestHealth_Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	r := run(context.Background(), nil, "", "health", "--server", "http://"+addr)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: not ready: cannot reach http://"+addr) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

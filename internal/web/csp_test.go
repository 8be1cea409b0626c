package web

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// connectSrc returns the sources of the connect-src directive of csp.
func connectSrc(t *testing.T, csp string) []string {
	t.Helper()
	for _, d := range strings.Split(csp, ";") {
		if f := strings.Fields(d); len(f) > 0 && f[0] == "connect-src" {
			return f[1:]
		}
	}
	t.Fatalf("no connect-src in %q", csp)
	return nil
}

func TestContentSecurityPolicy(t *testing.T) {
	members := []string{"10.0.0.1:7070", "10.0.0.2:7070", "node-3.example:7070"}
	for _, tc := range []struct {
		name    string
		host    string
		tls     bool
		origins []string
		want    []string
	}{
		{
			name: "no cluster", host: "10.0.0.1:7070",
			want: []string{"'self'", "ws://10.0.0.1:7070"},
		},
		{
			name: "members over HTTP", host: "10.0.0.1:7070", origins: members,
			want: []string{"'self'", "ws://10.0.0.1:7070",
				"http://10.0.0.2:7070", "ws://10.0.0.2:7070",
				"http://node-3.example:7070", "ws://node-3.example:7070"},
		},
		{
			name: "members over HTTPS", host: "10.0.0.1:7070", tls: true, origins: members,
			want: []string{"'self'", "wss://10.0.0.1:7070",
				"https://10.0.0.2:7070", "wss://10.0.0.2:7070",
				"https://node-3.example:7070", "wss://node-3.example:7070"},
		},
		{
			name: "configured origins keep their scheme", host: "10.0.0.1:7070",
			origins: []string{"https://chat.example.com", "http://Dev.Example:8080/"},
			want: []string{"'self'", "ws://10.0.0.1:7070",
				"https://chat.example.com", "wss://chat.example.com",
				"http://dev.example:8080", "ws://dev.example:8080"},
		},
		{
			name: "an HTTPS page gets no clear-text source", host: "chat.example.com", tls: true,
			origins: []string{"http://dev.example:8080", "https://chat.example.com", "https://other.example.com"},
			want: []string{"'self'", "wss://chat.example.com",
				"https://other.example.com", "wss://other.example.com"},
		},
		{
			name: "an unspecified host is the page's", host: "localhost:7070",
			origins: []string{"0.0.0.0:7071", "[::]:7072"},
			want: []string{"'self'", "ws://localhost:7070",
				"http://localhost:7071", "ws://localhost:7071",
				"http://localhost:7072", "ws://localhost:7072"},
		},
		{
			name: "what is not an origin is left out", host: "10.0.0.1:7070",
			origins: []string{"", "*", "*:7070", "ws:", "10.0.0.9", "10.0.0.9:7070; script-src *",
				"evil.example:80 'unsafe-inline'", "javascript:alert(1)", "ftp://files.example:21",
				"https://user@evil.example", "https://evil.example/path", "10.0.0.9:70700", "a b:1"},
			want: []string{"'self'", "ws://10.0.0.1:7070"},
		},
		{
			name: "a strange Host header is not reflected", host: "evil;script-src *",
			origins: []string{"10.0.0.2:7070"},
			want:    []string{"'self'", "http://10.0.0.2:7070", "ws://10.0.0.2:7070"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = tc.host
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			csp := ContentSecurityPolicy(r, tc.origins)
			if got := connectSrc(t, csp); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("connect-src\n got %q\nwant %q", got, tc.want)
			}
			for _, d := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, d) {
					t.Errorf("policy %q lacks %q", csp, d)
				}
			}
		})
	}
}

// TestHandler_CSP checks every answer of the app, found or not, carries
// the policy computed from the origins the node gives at that moment.
func TestHandler_CSP(t *testing.T) {
	origins := []string{"10.0.0.2:7070"}
	h := New(Options{Origins: func() []string { return origins }})
	for _, p := range []string{"/", "/js/app.js", "/nope"} {
		res := get(t, h, "GET", p, nil)
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "connect-src 'self' ws://example.com http://10.0.0.2:7070 ws://10.0.0.2:7070;") {
			t.Errorf("GET %s: Content-Security-Policy %q", p, csp)
		}
		if strings.Contains(csp, " ws: ") || strings.Contains(csp, " wss:") {
			t.Errorf("GET %s: a WebSocket wildcard in %q", p, csp)
		}
	}
	origins = append(origins, "10.0.0.3:7070") // a node joins
	if csp := get(t, h, "GET", "/", nil).Header.Get("Content-Security-Policy"); !strings.Contains(csp, "ws://10.0.0.3:7070") {
		t.Errorf("the policy does not follow the cluster: %q", csp)
	}
	res := get(t, WithAPI(http.NotFoundHandler(), Options{Origins: func() []string { return origins }}), "GET", "/", nil)
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "http://10.0.0.3:7070") {
		t.Errorf("WithAPI: Content-Security-Policy %q", csp)
	}
}

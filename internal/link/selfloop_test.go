package link_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
)

// TestService_LoopRoots: Create and Update refuse a long URL anywhere on
// the short domain (RootURL) or on a links listener SelfRoots returns at
// the time of the call, and store nothing.
func TestService_LoopRoots(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	listeners := []string{"10.0.0.3:8080"}
	s := mustService(t, newSpy(4), newClock(), func(c *link.Config) {
		c.SelfURLs = func() []string { return []string{"https://par.ly"} }
		c.RootURL = "https://s.example"
		c.SelfRoots = func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), listeners...)
		}
	})
	refused := func(t *testing.T, url string) {
		t.Helper()
		_, err := s.Create(ctx, "alice", url, "loop", "", link.Options{})
		wantCode(t, err, errs.Invalid)
		if !strings.Contains(err.Error(), "would loop") {
			t.Fatalf("Create(%q) = %v, want it to say the link would loop", url, err)
		}
		_, err = s.Info(ctx, "loop")
		wantCode(t, err, errs.NotFound)
	}
	refused(t, "https://s.example/abc")
	refused(t, "http://10.0.0.3:8080/abc")
	refused(t, "http://10.0.0.3:8080/")
	refused(t, "https://par.ly/s/abc")
	mustCreate(t, s, "alice", "http://10.0.0.3:8081/abc", "other-port")
	l := mustCreate(t, s, "alice", "http://10.0.0.4:8080/abc", "later")

	// A member joins with a links listener: the check sees it from then on.
	mu.Lock()
	listeners = append(listeners, "10.0.0.4:8080")
	mu.Unlock()
	refused(t, "http://10.0.0.4:8080/abc")
	u := "http://10.0.0.4:8080/other"
	_, err := s.Update(ctx, "alice", l.Code, link.Patch{URL: &u})
	wantCode(t, err, errs.Invalid)
	if info, err := s.Info(ctx, l.Code); err != nil || info.URL != l.URL {
		t.Fatalf("Info after a refused update = %+v, %v; want the URL %s kept", info, err, l.URL)
	}
}

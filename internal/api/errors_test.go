package api

import (
	"net/http/httptest"
	"testing"
)

// The secret of an incoming webhook's URL never reaches a log line.
func TestLoggedPath_HidesTheSecret(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/hooks/town.0123456789abcdef/s3cr3t-VALUE", nil)
	r.SetPathValue("key", "town.0123456789abcdef")
	r.SetPathValue("secret", "s3cr3t-VALUE")
	if got, want := loggedPath(r), "/api/v1/hooks/town.0123456789abcdef/{secret}"; got != want {
		t.Fatalf("loggedPath = %q, want %q", got, want)
	}
	plain := httptest.NewRequest("GET", "/api/v1/rooms/town", nil)
	if got := loggedPath(plain); got != "/api/v1/rooms/town" {
		t.Fatalf("loggedPath = %q", got)
	}
}

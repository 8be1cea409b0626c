package account

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestCheckUsername(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want: "" for accepted, else a part of the message
	}{
		{"plain", "alice_01.b-c", ""},
		{"empty", "", "username is empty"},
		{"too long", strings.Repeat("a", 33), "limit is 32"},
		{"space", "bob smith", "only letters, digits"},
		{"escape", "bob\x1b[2J", "username: control character U+001B not allowed"},
		{"C1", "bob\u0085", "username: control character U+0085 not allowed"},
		{"override", "\u202ebob", "username: bidirectional formatting character U+202E not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckUsername(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckUsername(%q) = %v, want nil", tc.in, err)
			case tc.want != "" && (!errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckUsername(%q) = %v, want invalid containing %q", tc.in, err, tc.want)
			}
		})
	}
}

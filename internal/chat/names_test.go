package chat

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/partkey"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func TestCanonicalRoom(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"general", "general", true},
		{"General", "general", true},
		{"A-b_C.9", "a-b_c.9", true},
		{strings.Repeat("x", MaxRoomName), strings.Repeat("x", MaxRoomName), true},
		{"...", "...", true},
		{"", "", false},
		{".", "", false},
		{"..", "", false},
		{strings.Repeat("x", MaxRoomName+1), "", false},
		{"a/b", "", false},
		{"a b", "", false},
		{"é", "", false},
		{"a\x00", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := CanonicalRoom(tc.in)
			if tc.ok {
				if err != nil || got != tc.want {
					t.Fatalf("CanonicalRoom(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				if !isCanonicalRoom(got) {
					t.Fatalf("%q is not canonical", got)
				}
				return
			}
			wantCode(t, err, errs.Invalid)
			if !strings.Contains(err.Error(), "room name") {
				t.Fatalf("error %q does not name the room name", err)
			}
		})
	}
	if isCanonicalRoom("General") {
		t.Fatal(`"General" is canonical`)
	}
}

// TestCanonicalRoom_IsThePartkeyRoutingKey: the Go client routes a room
// by partkey.Room, so it must be the name the server places the room by.
func TestCanonicalRoom_IsThePartkeyRoutingKey(t *testing.T) {
	for _, name := range []string{"general", "General", "TOWN-hall_2.0", "a", "Zz"} {
		c, err := CanonicalRoom(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := partkey.Room(name); got != c {
			t.Errorf("partkey.Room(%q) = %q, the server places it as %q", name, got, c)
		}
	}
}

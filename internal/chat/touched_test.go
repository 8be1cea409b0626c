package chat

import (
	"testing"

	"github.com/parley-chat/parley/internal/kv"
)

func TestTouchedKey(t *testing.T) {
	cases := []struct {
		name string
		cmd  []byte
		room string
		ok   bool
	}{
		{"post", EncodePost(Post{Room: "r", User: "a", Text: "hi"}), "r", true},
		{"whisper", EncodePost(Post{Room: "r", User: "a", To: []string{"b"}, Text: "hi"}), "r", true},
		{"join", EncodeJoin(Join{Room: "r", User: "a"}), "r", true},
		{"leave", EncodeLeave(Leave{Room: "r", User: "a"}), "r", true},
		{"delete", EncodeDeleteRoom(DeleteRoom{Room: "r", User: "a"}), "r", true},
		{"admin delete", EncodeDeleteRoom(DeleteRoom{Room: "r", User: "a", Admin: true}), "r", true},
		{"mark read", EncodeMarkRead(MarkRead{Room: "r", User: "a", Seq: 1}), "", false},
		{"create", EncodeCreateRoom(CreateRoom{Room: "r", Owner: "a", MaxMembers: 3}), "", false},
		{"compact", EncodeCompact(Compact{RetentionMs: 1}), "", false},
		{"other domain", kv.EncodePut(kv.Put{Key: "r", Value: []byte("x")}), "", false},
		{"malformed", []byte{Tag, opPost, 9}, "", false},
		{"empty room", []byte{Tag, opJoin, 0}, "", false},
		{"bad flags", []byte{Tag, opDelete, 0x80, 1, 'r'}, "", false},
		{"short", []byte{Tag}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if room, ok := TouchedKey(tc.cmd); room != tc.room || ok != tc.ok {
				t.Fatalf("TouchedKey = %q, %v; want %q, %v", room, ok, tc.room, tc.ok)
			}
		})
	}
}

// TouchedKey never panics, and a command that decodes names the room it
// reports.
func FuzzTouchedKey(f *testing.F) {
	f.Add(EncodePost(Post{Room: "r", User: "a", Text: "hi"}))
	f.Add(EncodeDeleteRoom(DeleteRoom{Room: "r", User: "a", Admin: true}))
	f.Add([]byte{Tag, opLeave, 0xff})
	f.Fuzz(func(t *testing.T, cmd []byte) {
		room, ok := TouchedKey(cmd)
		c, err := DecodeCommand(cmd)
		if err != nil || !ok {
			return
		}
		var want string
		switch c := c.(type) {
		case Post:
			want = c.Room
		case Join:
			want = c.Room
		case Leave:
			want = c.Room
		case DeleteRoom:
			want = c.Room
		}
		if room != want {
			t.Fatalf("TouchedKey = %q, the command names %q", room, want)
		}
	})
}

package node

import (
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/queue"
)

func TestChangedRoom(t *testing.T) {
	cases := []struct {
		name string
		cmd  []byte
		room string
		ok   bool
	}{
		{"post", chat.EncodePost(chat.Post{Room: "r", User: "a", Text: "hi"}), "r", true},
		{"whisper", chat.EncodePost(chat.Post{Room: "r", User: "a", To: []string{"b"}, Text: "hi"}), "r", true},
		{"join", chat.EncodeJoin(chat.Join{Room: "r", User: "a"}), "r", true},
		{"leave", chat.EncodeLeave(chat.Leave{Room: "r", User: "a"}), "r", true},
		{"delete", chat.EncodeDeleteRoom(chat.DeleteRoom{Room: "r", User: "a"}), "r", true},
		{"mark read", chat.EncodeMarkRead(chat.MarkRead{Room: "r", User: "a", Seq: 1}), "", false},
		{"create", chat.EncodeCreateRoom(chat.CreateRoom{Room: "r", Owner: "a", MaxMembers: 3}), "", false},
		{"queue", queue.EncodeSend(queue.Send{Queue: "r", User: "a", Body: []byte("x")}), "", false},
		{"malformed", []byte{chat.Tag, 'p', 9}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if room, ok := changedRoom(tc.cmd); room != tc.room || ok != tc.ok {
				t.Fatalf("changedRoom = %q, %v; want %q, %v", room, ok, tc.room, tc.ok)
			}
		})
	}
}

func TestRoomSignals(t *testing.T) {
	rs := newRoomSignals()
	ch := rs.changed("r")
	other := rs.changed("s")
	rs.record(1, "r", 10)
	rs.record(1, "r", 12)
	select {
	case <-ch:
		t.Fatal("woken before the entry was reported visible")
	default:
	}
	rs.applied(1, 10)
	select {
	case <-ch:
	default:
		t.Fatal("not woken once the entry was visible")
	}
	select {
	case <-other:
		t.Fatal("another room's waiter woke")
	default:
	}
	ch2 := rs.changed("r")
	rs.applied(2, 12) // another partition
	select {
	case <-ch2:
		t.Fatal("woken by another partition's index")
	default:
	}
	rs.applied(1, 12)
	select {
	case <-ch2:
	default:
		t.Fatal("not woken by the second entry")
	}
}

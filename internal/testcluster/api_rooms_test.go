package testcluster_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Rooms through every node, including nodes that hold no replica of the
// room's partition.
func TestAPI_Rooms(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		ctx := apiCtx(t)
		n := c.Len()
		admin := signUpAdmin(t, c, 0, "root")
		owner := signUp(t, c, 1, 1, "olga")
		pat := signUp(t, c, 2, 2, "pat")
		quinn := signUp(t, c, n-1, n-1, "quinn")

		room := "Forum"
		far := noReplica(c, "forum")
		if n == 4 && far < 0 {
			t.Fatal("a 4-node RF3 cluster has no node without a replica of the room's partition")
		}
		if far < 0 {
			far = 2 // every node holds every partition
		} else {
			t.Logf("n%d holds no replica of room %q", far+1, room)
		}

		created, err := as(c, far, owner).CreateRoom(ctx, client.RoomSpec{Name: room, MaxMembers: 3})
		if err != nil || created.Name != "forum" || created.Owner != "olga" || created.Members != 1 || created.MaxMembers != 3 {
			t.Fatalf("create = %+v, %v", created, err)
		}
		t.Run("create conflicts and bad input change nothing", func(t *testing.T) {
			for i := 0; i < n; i++ {
				_, err := as(c, i, pat).CreateRoom(ctx, client.RoomSpec{Name: "FORUM"})
				mustStatus(t, err, http.StatusConflict, "conflict")
			}
			for _, spec := range []client.RoomSpec{
				{Name: "bad/name"},
				{Name: strings.Repeat("r", 65)},
				{Name: "p", Private: true},
				{Name: "p", Password: "only private rooms"},
				{Name: "p", MaxMembers: -1},
			} {
				_, err := as(c, far, pat).CreateRoom(ctx, spec)
				mustStatus(t, err, http.StatusBadRequest, "invalid")
			}
			rooms, err := as(c, 0, pat).ListRooms(ctx)
			if err != nil || len(rooms) != 1 || rooms[0].Name != "forum" || rooms[0].Owner != "olga" || rooms[0].MaxMembers != 3 {
				t.Fatalf("rooms after refusals = %+v, %v", rooms, err)
			}
		})
		t.Run("private room password", func(t *testing.T) {
			if _, err := as(c, 0, owner).CreateRoom(ctx, client.RoomSpec{Name: "vault", Private: true, Password: "open sesame"}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				_, err := as(c, i, pat).JoinRoom(ctx, "vault", "")
				mustStatus(t, err, http.StatusForbidden, "forbidden")
				_, err = as(c, i, pat).JoinRoom(ctx, "vault", "open says me")
				mustStatus(t, err, http.StatusForbidden, "forbidden")
				_, err = as(c, i, pat).History(ctx, "vault", client.HistoryOptions{})
				mustStatus(t, err, http.StatusForbidden, "forbidden")
			}
			rooms, err := as(c, 1, pat).ListRooms(ctx)
			if err != nil || len(rooms) != 1 {
				t.Fatalf("pat sees %+v, %v: a private room is listed only for members", rooms, err)
			}
			r, err := as(c, n-1, pat).JoinRoom(ctx, "vault", "open sesame")
			if err != nil || r.Members != 2 {
				t.Fatalf("join with the password = %+v, %v", r, err)
			}
			members, err := as(c, 0, owner).Members(ctx, "vault")
			if err != nil || len(members) != 2 {
				t.Fatalf("members = %+v, %v", members, err)
			}
			if err := as(c, 2, owner).DeleteRoom(ctx, "vault"); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("max_members full", func(t *testing.T) {
			if _, err := as(c, 0, pat).JoinRoom(ctx, room, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := as(c, far, quinn).JoinRoom(ctx, room, ""); err != nil {
				t.Fatal(err)
			}
			_, err := as(c, 1, admin).JoinRoom(ctx, room, "")
			mustStatus(t, err, http.StatusConflict, "conflict")
			members, err := as(c, far, admin).Members(ctx, room)
			if err != nil || len(members) != 3 {
				t.Fatalf("members of a full room = %+v, %v", members, err)
			}
		})
		t.Run("whispers", func(t *testing.T) {
			msg, err := as(c, 0, owner).Post(ctx, room, "for everyone", client.PostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wsp, err := as(c, far, owner).Post(ctx, room, "just for pat", client.PostOptions{To: []string{"PAT"}})
			if err != nil || wsp.Seq != msg.Seq+1 || wsp.Sender != "olga" {
				t.Fatalf("whisper = %+v, %v; want seq %d", wsp, err, msg.Seq+1)
			}
			for i := 0; i < n; i++ {
				for _, who := range []struct {
					cl       *client.Client
					name     string
					wantKind string
				}{{owner, "olga", "whisper"}, {pat, "pat", "whisper"}, {quinn, "quinn", "hidden"}} {
					events, err := as(c, i, who.cl).History(ctx, room, client.HistoryOptions{After: msg.Seq - 1, HasAfter: true})
					if err != nil || len(events) != 2 {
						t.Fatalf("%s's history via n%d = %s, %v", who.name, i+1, fmtSeqs(events), err)
					}
					e := events[1]
					if e.Seq != wsp.Seq || e.Kind != who.wantKind {
						t.Fatalf("%s sees seq %d as %q via n%d, want seq %d as %q", who.name, e.Seq, e.Kind, i+1, wsp.Seq, who.wantKind)
					}
					if who.wantKind == "hidden" && (e.Text != "" || e.Sender != "" || len(e.To) != 0) {
						t.Fatalf("a hidden whisper shows %+v", e)
					}
					if who.wantKind == "whisper" && e.Text != "just for pat" {
						t.Fatalf("%s sees the whisper as %+v", who.name, e)
					}
				}
			}
			_, err = as(c, 1, owner).Post(ctx, room, "x", client.PostOptions{To: []string{"nobody-here"}})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
		})
		t.Run("history pages and bad input", func(t *testing.T) {
			all, err := as(c, far, pat).History(ctx, room, client.HistoryOptions{})
			if err != nil || len(all) < 5 || all[0].Seq != 1 {
				t.Fatalf("history = %s, %v", fmtSeqs(all), err)
			}
			last := all[len(all)-1].Seq
			first2, err := as(c, 0, pat).History(ctx, room, client.HistoryOptions{HasAfter: true, Limit: 2})
			if err != nil || fmtSeqs(first2) != fmtSeqs(all[:2]) {
				t.Fatalf("after=0 limit=2 = %s, %v; want %s", fmtSeqs(first2), err, fmtSeqs(all[:2]))
			}
			before, err := as(c, 1, pat).History(ctx, room, client.HistoryOptions{Before: last, Limit: 2})
			if err != nil || fmtSeqs(before) != fmtSeqs(all[len(all)-3:len(all)-1]) {
				t.Fatalf("before=%d limit=2 = %s, %v", last, fmtSeqs(before), err)
			}
			// The window around a message, as the web app opens a search result:
			// before=S+1 ends with S, after=S goes on from it, with no gap.
			mid := len(all) / 2
			upTo, err := as(c, 0, pat).History(ctx, room, client.HistoryOptions{Before: all[mid].Seq + 1, Limit: 2})
			if err != nil || fmtSeqs(upTo) != fmtSeqs(all[mid-1:mid+1]) {
				t.Fatalf("before=%d limit=2 = %s, %v; want %s", all[mid].Seq+1, fmtSeqs(upTo), err, fmtSeqs(all[mid-1:mid+1]))
			}
			from, err := as(c, 1, pat).History(ctx, room, client.HistoryOptions{After: all[mid].Seq, HasAfter: true, Limit: 2})
			if err != nil || fmtSeqs(from) != fmtSeqs(all[mid+1:mid+3]) {
				t.Fatalf("after=%d limit=2 = %s, %v; want %s", all[mid].Seq, fmtSeqs(from), err, fmtSeqs(all[mid+1:mid+3]))
			}
			_, err = as(c, 0, pat).History(ctx, room, client.HistoryOptions{Limit: 501})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			_, err = as(c, 0, pat).Post(ctx, room, strings.Repeat("x", 4097), client.PostOptions{})
			mustStatus(t, err, http.StatusRequestEntityTooLarge, "too_large")
			_, err = as(c, 0, pat).Post(ctx, room, "", client.PostOptions{})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			_, err = as(c, 0, admin).Post(ctx, room, "not a member", client.PostOptions{})
			mustStatus(t, err, http.StatusForbidden, "forbidden")
			again, err := as(c, far, pat).History(ctx, room, client.HistoryOptions{})
			if err != nil || fmtSeqs(again) != fmtSeqs(all) {
				t.Fatalf("history after refused posts = %s, %v; want %s", fmtSeqs(again), err, fmtSeqs(all))
			}
		})
		t.Run("idempotent post through two nodes", func(t *testing.T) {
			kctx := client.WithIdempotencyKey(ctx, "post-1")
			first, err := as(c, 0, pat).Post(kctx, room, "once", client.PostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			retry, err := as(c, n-1, pat).Post(kctx, room, "once", client.PostOptions{})
			if err != nil || retry != first {
				t.Fatalf("retry = %+v, %v; want %+v", retry, err, first)
			}
		})
		t.Run("read markers and room list", func(t *testing.T) {
			if _, err := as(c, 1, owner).Post(ctx, room, "unread by pat", client.PostOptions{}); err != nil {
				t.Fatal(err)
			}
			rooms, err := as(c, 0, pat).ListRooms(ctx)
			if err != nil || len(rooms) != 1 || !rooms[0].Member || rooms[0].LastRead >= rooms[0].LastSeq {
				t.Fatalf("pat's rooms = %+v, %v; want unread events", rooms, err)
			}
			marker, err := as(c, far, pat).MarkRead(ctx, room, rooms[0].LastSeq)
			if err != nil || marker != rooms[0].LastSeq {
				t.Fatalf("mark read = %d, %v", marker, err)
			}
			if marker, err = as(c, 1, pat).MarkRead(ctx, room, 1); err != nil || marker != rooms[0].LastSeq {
				t.Fatalf("marker went back to %d (%v)", marker, err)
			}
			rooms, err = as(c, n-1, pat).ListRooms(ctx)
			if err != nil || rooms[0].LastRead != rooms[0].LastSeq {
				t.Fatalf("pat's rooms after reading = %+v, %v", rooms, err)
			}
			_, err = as(c, 0, admin).MarkRead(ctx, room, 1)
			mustStatus(t, err, http.StatusForbidden, "forbidden")
		})
		t.Run("leave and delete", func(t *testing.T) {
			if err := as(c, far, quinn).LeaveRoom(ctx, room); err != nil {
				t.Fatal(err)
			}
			if _, err := as(c, 0, admin).JoinRoom(ctx, room, ""); err != nil {
				t.Fatalf("join after a seat freed: %v", err)
			}
			events, err := as(c, 1, admin).History(ctx, room, client.HistoryOptions{Limit: 2})
			if err != nil || len(events) != 2 || fmt.Sprint(events[0].Kind, events[0].Sender, events[1].Kind) != "leavequinnjoin" {
				t.Fatalf("latest events %+v, %v", events, err)
			}
			err = as(c, 0, pat).DeleteRoom(ctx, room)
			mustStatus(t, err, http.StatusForbidden, "forbidden")
			if err := as(c, far, owner).DeleteRoom(ctx, room); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				_, err := as(c, i, pat).History(ctx, room, client.HistoryOptions{})
				mustStatus(t, err, http.StatusNotFound, "not_found")
			}
			if _, err := as(c, 2, admin).CreateRoom(ctx, client.RoomSpec{Name: "temp"}); err != nil {
				t.Fatal(err)
			}
			if err := as(c, far, admin).DeleteRoom(ctx, "temp"); err != nil {
				t.Fatalf("an admin deletes: %v", err)
			}
		})
	})
}

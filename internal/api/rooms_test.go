package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

func TestAPI_Rooms(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice") // admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")

	var room chat.Room
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"General","max_members":2}`), http.StatusCreated, &room)
	if room.Name != "general" || room.Owner != "bob" || room.Members != 1 || room.MaxMembers != 2 || room.LastSeq != 1 {
		t.Fatalf("created %+v", room)
	}
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"secret","private":true,"password":"open sesame"}`), http.StatusCreated, nil)

	t.Run("create refused", func(t *testing.T) {
		before := e.stored()
		for _, tc := range []struct {
			name, body string
			status     int
			code, want string
		}{
			{"exists", `{"name":"GENERAL"}`, 409, "conflict", ""},
			{"bad name", `{"name":"a/b"}`, 400, "invalid", "room name"},
			{"no name", `{}`, 400, "invalid", "room name"},
			{"private without password", `{"name":"p","private":true}`, 400, "invalid", "password"},
			{"public with password", `{"name":"p","password":"open sesame"}`, 400, "invalid", "password"},
			{"negative max_members", `{"name":"p","max_members":-1}`, 400, "invalid", "max_members"},
			{"huge max_members", `{"name":"p","max_members":100000}`, 400, "invalid", "max_members"},
			{"max_members not a number", `{"name":"p","max_members":"ten"}`, 400, "invalid", "max_members"},
			{"unknown field", `{"name":"p","topic":"x"}`, 400, "invalid", `"topic"`},
			{"too large", `{"name":"p","password":"` + strings.Repeat("x", 9<<10) + `"}`, 413, "too_large", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms", tc.body), tc.status, tc.code, tc.want)
			})
		}
		if after := e.stored(); after != before {
			t.Fatalf("refused creates changed state: %v, then %v", before, after)
		}
	})
	t.Run("join", func(t *testing.T) {
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/join", ""), http.StatusOK, &room)
		if room.Members != 2 {
			t.Fatalf("after join %+v", room)
		}
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/General/join", `{}`), http.StatusOK, nil) // again: no-op
		mustError(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms/general/join", ""), 409, "conflict", "")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/secret/join", ""), 403, "forbidden", "password")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/secret/join", `{"password":"wrong one"}`), 403, "forbidden", "password")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/nowhere/join", ""), 404, "not_found", "")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/secret/join", `{"pasword":"x"}`), 400, "invalid", `"pasword"`)
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/secret/join", `{"password":"open sesame"}`), http.StatusOK, nil)
	})
	t.Run("list", func(t *testing.T) {
		var out roomsResponse
		mustJSON(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms", ""), http.StatusOK, &out)
		if len(out.Rooms) != 1 || out.Rooms[0].Name != "general" || out.Rooms[0].Member {
			t.Fatalf("alice sees %+v, want general only (secret is private)", out.Rooms)
		}
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/rooms?consistency=stale", ""), http.StatusOK, &out)
		if len(out.Rooms) != 2 || !out.Rooms[1].Member {
			t.Fatalf("carol sees %+v", out.Rooms)
		}
		mustError(t, e.call(t, carol, http.MethodGet, "/api/v1/rooms?consistency=eventual", ""), 400, "invalid", "consistency")
	})
	var seqs []uint64
	t.Run("post", func(t *testing.T) {
		var res chat.PostResult
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/general/messages", `{"text":"hello"}`), http.StatusCreated, &res)
		if res.Sender != "bob" || res.Seq != 3 || res.Ts == 0 {
			t.Fatalf("post %+v", res)
		}
		seqs = append(seqs, res.Seq)
		var again chat.PostResult
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/general/messages", `{"text":"once","request_id":"p1"}`), http.StatusCreated, &res)
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/general/messages", `{"text":"once"}`, "Idempotency-Key", "p1"), http.StatusCreated, &again)
		if again != res {
			t.Fatalf("retry %+v, want the first result %+v", again, res)
		}
		seqs = append(seqs, res.Seq)
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/general/messages", `{"text":"psst","to":["carol"]}`), http.StatusCreated, &res)
		seqs = append(seqs, res.Seq)
		before := e.stored()
		for _, tc := range []struct {
			name, token, body string
			headers           []string
			status            int
			code, want        string
		}{
			{"not a member", alice, `{"text":"hi"}`, nil, 403, "forbidden", ""},
			{"empty text", bob, `{"text":""}`, nil, 400, "invalid", "text"},
			{"text too long", bob, `{"text":"` + strings.Repeat("x", 4097) + `"}`, nil, 413, "too_large", "text"},
			{"body too large", bob, `{"text":"` + strings.Repeat(`\u0001`, 20000) + `"}`, nil, 413, "too_large", "limit"},
			{"to not a list", bob, `{"text":"hi","to":"carol"}`, nil, 400, "invalid", "to"},
			{"to not a member", bob, `{"text":"hi","to":["alice"]}`, nil, 400, "invalid", "to"},
			{"unknown field", bob, `{"text":"hi","room":"x"}`, nil, 400, "invalid", `"room"`},
			{"request ids differ", bob, `{"text":"hi","request_id":"a"}`, []string{"Idempotency-Key", "b"}, 400, "invalid", "request_id"},
			{"missing room", bob, `{"text":"hi"}`, nil, 404, "not_found", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := "/api/v1/rooms/general/messages"
				if tc.name == "missing room" {
					path = "/api/v1/rooms/nowhere/messages"
				}
				mustError(t, e.call(t, tc.token, http.MethodPost, path, tc.body, tc.headers...), tc.status, tc.code, tc.want)
			})
		}
		if after := e.stored(); after != before {
			t.Fatalf("refused posts changed state: %v, then %v", before, after)
		}
	})
	t.Run("history", func(t *testing.T) {
		var page historyResponse
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/rooms/general/messages", ""), http.StatusOK, &page)
		if len(page.Messages) != 5 || page.Messages[4].Kind != chat.KindWhisper || page.Messages[4].Text != "psst" {
			t.Fatalf("carol's history %+v", page.Messages)
		}
		mustJSON(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/general/messages?limit=2", ""), http.StatusOK, &page)
		if len(page.Messages) != 2 || page.Messages[1].Kind != chat.KindHidden || page.Messages[1].Seq != seqs[2] || page.Messages[1].Text != "" {
			t.Fatalf("alice's latest page %+v: want the whisper hidden", page.Messages)
		}
		// after=0 is a lower bound (the first events), not "absent" (the latest).
		mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages?after=0&limit=2", ""), http.StatusOK, &page)
		if len(page.Messages) != 2 || page.Messages[0].Seq != 1 || page.Messages[0].Kind != chat.KindJoin {
			t.Fatalf("after=0 page %+v", page.Messages)
		}
		mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages?before=3", ""), http.StatusOK, &page)
		if len(page.Messages) != 2 || page.Messages[1].Seq != 2 {
			t.Fatalf("before=3 page %+v", page.Messages)
		}
		mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages?after=99", ""), http.StatusOK, &page)
		if page.Messages == nil || len(page.Messages) != 0 {
			t.Fatalf("empty page %+v is not []", page.Messages)
		}
		for _, q := range []string{"after=-1", "after=x", "before=1.5", "limit=0", "limit=501", "limit=ten", "consistency=x"} {
			field, _, _ := strings.Cut(q, "=")
			mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages?"+q, ""), 400, "invalid", field)
		}
		mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/secret/messages", ""), 403, "forbidden", "")
		mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/nowhere/messages", ""), 404, "not_found", "")
		mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/bad%20name/messages", ""), 400, "invalid", "room name")
	})
	t.Run("history compacted", func(t *testing.T) {
		e.RoomRep.SetErr(&errs.Error{Code: chat.CodeHistoryCompacted, Message: "events before seq 9 were removed", Err: chat.ErrHistoryCompacted})
		defer e.RoomRep.SetErr(nil)
		mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages?after=1", ""), http.StatusGone, "history_compacted", "seq 9")
	})
	t.Run("read marker", func(t *testing.T) {
		var out readResponse
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/General/read", `{"seq":4}`), http.StatusOK, &out)
		if out.Room != "general" || out.LastRead != 4 {
			t.Fatalf("read %+v", out)
		}
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/read", `{"seq":1}`), http.StatusOK, &out)
		if out.LastRead != 4 {
			t.Fatalf("marker went back: %+v", out)
		}
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/read", `{}`), 400, "invalid", "seq")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/read", `{"seq":-2}`), 400, "invalid", "seq")
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/read", `{"seq":"4"}`), 400, "invalid", "seq")
		mustError(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms/general/read", `{"seq":4}`), 403, "forbidden", "")
	})
	t.Run("members", func(t *testing.T) {
		var out membersResponse
		mustJSON(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/general/members", ""), http.StatusOK, &out)
		if fmt.Sprint(names(out.Members)) != "[bob carol]" {
			t.Fatalf("members %+v", out.Members)
		}
		mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/secret/members", ""), 403, "forbidden", "")
	})
	t.Run("leave", func(t *testing.T) {
		var out leaveResponse
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/GENERAL/leave", ""), http.StatusOK, &out)
		if out.Room != "general" {
			t.Fatalf("leave %+v", out)
		}
		mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms/general/join", ""), http.StatusOK, nil) // a seat is free
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/general/leave", `{"x":1}`), 400, "invalid", `"x"`)
	})
	t.Run("delete", func(t *testing.T) {
		mustError(t, e.call(t, carol, http.MethodDelete, "/api/v1/rooms/general", ""), 403, "forbidden", "")
		if w := e.call(t, bob, http.MethodDelete, "/api/v1/rooms/general", ""); w.Code != http.StatusNoContent {
			t.Fatalf("owner delete = %d %s", w.Code, w.Body)
		}
		mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/general/messages", ""), 404, "not_found", "")
		if w := e.call(t, alice, http.MethodDelete, "/api/v1/rooms/secret", ""); w.Code != http.StatusNoContent {
			t.Fatalf("admin delete = %d %s", w.Code, w.Body)
		}
		mustError(t, e.call(t, alice, http.MethodDelete, "/api/v1/rooms/secret", ""), 404, "not_found", "")
	})
}

func names(ms []chat.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Username
	}
	return out
}

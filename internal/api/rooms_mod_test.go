package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// The moderation routes end to end: roles in the members listing, a
// muted member refused, a ban that keeps the user from reading, slow mode
// answered 429, and the moderation log with actors and reasons.
func TestAPI_RoomModeration(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	e.signUp(t, "root")
	owner, mod, bob := e.signUp(t, "olga"), e.signUp(t, "mona"), e.signUp(t, "bob")
	mustJSON(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms", `{"name":"Town"}`), http.StatusCreated, nil)
	for _, tok := range []string{mod, bob} {
		mustJSON(t, e.call(t, tok, http.MethodPost, "/api/v1/rooms/town/join", ""), http.StatusOK, nil)
	}
	mustJSON(t, e.call(t, owner, http.MethodPut, "/api/v1/rooms/town/members/Mona/role", `{"role":"moderator"}`), http.StatusOK, nil)
	mustError(t, e.call(t, mod, http.MethodPut, "/api/v1/rooms/town/members/bob/role", `{"role":"moderator"}`), http.StatusForbidden, "forbidden", "only the owner or an admin")
	mustError(t, e.call(t, owner, http.MethodPut, "/api/v1/rooms/town/members/bob/role", `{"role":"boss"}`), http.StatusBadRequest, "invalid", "role must be")

	var ms membersResponse
	mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/town/members", ""), http.StatusOK, &ms)
	roles := map[string]string{}
	for _, m := range ms.Members {
		roles[m.Username] = m.Role
	}
	if roles["olga"] != "owner" || roles["mona"] != "moderator" || roles["bob"] != "member" {
		t.Fatalf("roles = %v", roles)
	}

	mustJSON(t, e.call(t, mod, http.MethodPost, "/api/v1/rooms/town/members/bob/mute", `{"duration":600,"reason":"flood"}`), http.StatusOK, nil)
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/town/messages", `{"text":"hi"}`), http.StatusForbidden, "forbidden", "muted")
	mustError(t, e.call(t, mod, http.MethodPost, "/api/v1/rooms/town/members/bob/mute", `{}`), http.StatusBadRequest, "invalid", "duration")
	mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/town/messages", ""), http.StatusOK, nil) // muted users read
	mustJSON(t, e.call(t, mod, http.MethodDelete, "/api/v1/rooms/town/members/bob/mute", ""), http.StatusOK, nil)

	var room chat.Room
	mustJSON(t, e.call(t, owner, http.MethodPatch, "/api/v1/rooms/town", `{"slow_mode":60,"topic":"News","max_members":50}`), http.StatusOK, &room)
	if room.SlowMode != 60 || room.Topic != "News" || room.MaxMembers != 50 {
		t.Fatalf("room after settings = %+v", room)
	}
	mustError(t, e.call(t, owner, http.MethodPatch, "/api/v1/rooms/town", `{"slow_mode":-1}`), http.StatusBadRequest, "invalid", "slow_mode")
	mustError(t, e.call(t, owner, http.MethodPatch, "/api/v1/rooms/town", `{"colour":"red"}`), http.StatusBadRequest, "invalid", "colour")
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/town/messages", `{"text":"one"}`), http.StatusCreated, nil)
	w := e.call(t, bob, http.MethodPost, "/api/v1/rooms/town/messages", `{"text":"two"}`)
	mustError(t, w, http.StatusTooManyRequests, "rate_limited", "slow mode")
	// One post every 60 s, the last one just now: wait (nearly) all of it.
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 50 || ra > 60 {
		t.Fatalf("slow mode of 60 s, right after a post: Retry-After %q, want 50 to 60", w.Header().Get("Retry-After"))
	}

	mustJSON(t, e.call(t, mod, http.MethodPost, "/api/v1/rooms/town/members/bob/ban", `{"reason":"spam"}`), http.StatusOK, nil)
	mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/town/messages", ""), http.StatusForbidden, "forbidden", "banned")
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/town/join", ""), http.StatusForbidden, "forbidden", "banned")
	mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/town", ""), http.StatusForbidden, "forbidden", "banned")

	var log chat.ModerationLog
	mustJSON(t, e.call(t, mod, http.MethodGet, "/api/v1/rooms/town/moderation", ""), http.StatusOK, &log)
	if len(log.Bans) != 1 || log.Bans[0].User != "bob" || log.Bans[0].By != "mona" || log.Bans[0].Reason != "spam" || len(log.Mutes) != 0 {
		t.Fatalf("log = %+v", log)
	}
	var kinds []string
	for _, ev := range log.Events {
		kinds = append(kinds, ev.Kind+" "+ev.Sender+" "+ev.User+" "+ev.Reason)
	}
	want := []string{"role olga mona ", "mute mona bob flood", "unmute mona bob ", "settings olga  ", "ban mona bob spam"}
	if len(kinds) != len(want) {
		t.Fatalf("events = %q, want %q", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events = %q, want %q", kinds, want)
		}
	}
}

// Invitation-only rooms: created so, joined only by the invited.
func TestAPI_RoomInvitations(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	e.signUp(t, "root")
	owner, bob, eve := e.signUp(t, "olga"), e.signUp(t, "bob"), e.signUp(t, "eve")
	var room chat.Room
	mustJSON(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms", `{"name":"club","invite_only":true}`), http.StatusCreated, &room)
	if !room.Private || !room.InviteOnly {
		t.Fatalf("room = %+v", room)
	}
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/club/join", ""), http.StatusForbidden, "forbidden", "invitation-only")
	mustError(t, e.call(t, eve, http.MethodPost, "/api/v1/rooms/club/invites", `{"username":"bob"}`), http.StatusForbidden, "forbidden", "only the owner, a moderator")
	mustJSON(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms/club/invites", `{"username":"bob"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/club/join", ""), http.StatusOK, nil)
	mustError(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms/club/invites", `{"username":"bob"}`), http.StatusConflict, "conflict", "already a member")
	mustError(t, e.call(t, owner, http.MethodDelete, "/api/v1/rooms/club/invites/eve", ""), http.StatusNotFound, "not_found", "no invitation")
	mustError(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms", `{"name":"bad","invite_only":true,"password":"something long"}`), http.StatusBadRequest, "invalid", "password")
}

package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// A room's own retention (owner only) and its legal hold (admins only)
// through the API: both shown in the room, the hold refusing deletes with
// 409, and resuming before what retention removed answered 410.
func TestAPI_RoomRetentionAndLegalHold(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	admin := e.signUp(t, "root")
	owner, mod := e.signUp(t, "olga"), e.signUp(t, "mona")
	mustJSON(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms", `{"name":"vault"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, mod, http.MethodPost, "/api/v1/rooms/vault/join", ""), http.StatusOK, nil)
	mustJSON(t, e.call(t, owner, http.MethodPut, "/api/v1/rooms/vault/members/mona/role", `{"role":"moderator"}`), http.StatusOK, nil)

	mustError(t, e.call(t, mod, http.MethodPatch, "/api/v1/rooms/vault", `{"retention_messages":2}`), http.StatusForbidden, "forbidden", "only the owner or an admin")
	mustError(t, e.call(t, owner, http.MethodPatch, "/api/v1/rooms/vault", `{"retention_days":-2}`), http.StatusBadRequest, "invalid", "retention_days")
	var room chat.Room
	mustJSON(t, e.call(t, owner, http.MethodPatch, "/api/v1/rooms/vault", `{"retention_days":-1,"retention_messages":2}`), http.StatusOK, &room)
	if room.RetentionDays != -1 || room.RetentionMessages != 2 || room.LegalHold {
		t.Fatalf("room after the retention settings = %+v", room)
	}

	mustError(t, e.call(t, owner, http.MethodPut, "/api/v1/rooms/vault/legal-hold", ""), http.StatusForbidden, "forbidden", "admin")
	mustJSON(t, e.call(t, admin, http.MethodPut, "/api/v1/rooms/vault/legal-hold", ""), http.StatusOK, &room)
	if !room.LegalHold {
		t.Fatalf("room after the hold = %+v", room)
	}
	var res chat.PostResult
	for range 4 {
		mustJSON(t, e.call(t, owner, http.MethodPost, "/api/v1/rooms/vault/messages", `{"text":"evidence"}`), http.StatusCreated, &res)
	}
	mustError(t, e.call(t, owner, http.MethodDelete, fmt.Sprintf("/api/v1/rooms/vault/messages/%d", res.Seq), ""), http.StatusConflict, "conflict", "legal hold")
	mustError(t, e.call(t, admin, http.MethodDelete, "/api/v1/rooms/vault", ""), http.StatusConflict, "conflict", "legal hold")
	p := e.RoomRep.PartitionOf("vault")
	if c, err := e.Rooms.Compact(t.Context(), p, 0, 0); err != nil || c.Deleted != 0 {
		t.Fatalf("compact under hold = %+v, %v", c, err)
	}
	mustJSON(t, e.call(t, mod, http.MethodGet, "/api/v1/rooms/vault", ""), http.StatusOK, &room)
	if !room.LegalHold || room.FirstRetainedSeq != 1 {
		t.Fatalf("held room = %+v", room)
	}

	mustJSON(t, e.call(t, admin, http.MethodDelete, "/api/v1/rooms/vault/legal-hold", ""), http.StatusOK, &room)
	if room.LegalHold {
		t.Fatalf("room after lifting the hold = %+v", room)
	}
	if c, err := e.Rooms.Compact(t.Context(), p, 0, 0); err != nil || c.Deleted == 0 {
		t.Fatalf("compact after the hold = %+v, %v", c, err)
	}
	mustError(t, e.call(t, mod, http.MethodGet, "/api/v1/rooms/vault/messages?after=1", ""), http.StatusGone, "history_compacted", "retention")
}

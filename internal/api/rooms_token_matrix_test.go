package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/account"
)

// roomTokenScopes are the scopes of the personal API tokens the room roles
// call room routes with ({r}: the sample room).
var roomTokenScopes = [][]string{
	{"read"}, {"write"}, {"read:room/{r}"}, {"write:room/{r}"}, {"write:room/other"}, {"write:queue/{r}"}, {"admin"},
}

// TestRooms_TokenRoleMatrix crosses room roles with API token scopes: every
// room route, taken from the route table, is called by each signed-in room
// identity (non-member to admin) through a token of each scope, on a room
// of its own (setupMatrixRoom). The call succeeds only when both the
// role (roomMatrix) and the scopes (tokenNeeds) allow it: a moderator's
// read token cannot kick, an owner's token for another room cannot delete
// this one, and an admin's token without the admin scope has a plain
// user's powers (a non-member's). Refused calls change nothing.
func TestRooms_TokenRoleMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("about 1300 rooms")
	}
	e := newMatrixEnv(t)
	routes := e.srv.Routes()
	patterns := checkRows(t, routes, "/api/v1/rooms/{room}", "roomMatrix", roomMatrix)
	byPattern := map[string]Route{}
	for _, r := range routes {
		byPattern[r.Pattern] = r
	}
	roles := slices.DeleteFunc(slices.Clone(roomIdentities), func(id string) bool { return id == asAnonymous })
	sessions := map[string]string{asAdmin: e.signUp(t, matrixUsers[asAdmin])} // the first user: an admin
	for _, id := range roomIdentities {
		if id != asAnonymous && id != asAdmin {
			sessions[id] = e.signUp(t, matrixUsers[id])
		}
	}
	n := 0
	for _, pattern := range patterns {
		row, r := roomMatrix[pattern], byPattern[pattern]
		for _, role := range roles {
			for _, template := range roomTokenScopes {
				if slices.Contains(template, "admin") && role != asAdmin {
					continue // only an admin may hold the admin scope
				}
				n++
				room := fmt.Sprintf("t%d", n)
				scopes := make([]string, len(template))
				for i, s := range template {
					scopes[i] = strings.ReplaceAll(s, "{r}", room)
				}
				method, path := setupRoomCall(t, e, pattern, room, false)
				token, tokenID := e.mintToken(t, sessions[role], scopes...)
				t.Run(fmt.Sprintf("%s as %s %v", pattern, role, template), func(t *testing.T) {
					as := role
					if role == asAdmin && !slices.Contains(scopes, "admin") {
						as = asNonMember
					}
					byScope := !scopeAllows(t, r, scopes, account.KindRoom, room)
					before := e.stored()
					w := e.call(t, token, method, path, row.body, row.headers...)
					if !byScope && slices.Contains(row.allow, as) {
						if w.Code < 200 || w.Code > 299 {
							t.Fatalf("%s %s = %d %s, want success", method, path, w.Code, w.Body)
						}
						return
					}
					mustRefusal(t, w, false, byScope, http.StatusForbidden)
					if after := e.stored(); after != before {
						t.Fatalf("a refused %s %s changed state: %s, then %s", method, path, before, after)
					}
				})
				if err := e.Accounts.RevokeToken(t.Context(), matrixUsers[role], tokenID); err != nil {
					t.Fatal(err) // a user holds at most account.MaxTokensPerUser
				}
			}
		}
	}
}

// privateMatrix is who may call a room route on a private room where that
// differs from roomMatrix: only members read it, and its password is
// needed to join (none is sent). An admin who is not a member manages it
// (settings, moderation, hooks, export) but does not read it.
var privateMatrix = map[string][]string{
	"GET /api/v1/rooms/{room}":                       members,
	"POST /api/v1/rooms/{room}/join":                 members,
	"GET /api/v1/rooms/{room}/members":               members,
	"GET /api/v1/rooms/{room}/messages":              members,
	"GET /api/v1/rooms/{room}/messages/{seq}":        members,
	"GET /api/v1/rooms/{room}/messages/{seq}/thread": members,
	"GET /api/v1/rooms/{room}/pins":                  members,
}

// TestRooms_PrivatePermissionMatrix is TestRooms_PermissionMatrix on
// private rooms: every room route, taken from the route table, as each room
// identity, allowed as privateMatrix says where it has a row and as
// roomMatrix says elsewhere.
func TestRooms_PrivatePermissionMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("about 250 rooms")
	}
	e := newMatrixEnv(t)
	patterns := checkRows(t, e.srv.Routes(), "/api/v1/rooms/{room}", "roomMatrix", roomMatrix)
	for p := range privateMatrix {
		if _, ok := roomMatrix[p]; !ok {
			t.Fatalf("privateMatrix row %s names no room route", p)
		}
	}
	tokens := map[string]string{asAnonymous: ""}
	tokens[asAdmin] = e.signUp(t, matrixUsers[asAdmin]) // the first user: an admin
	for _, id := range roomIdentities {
		if id != asAnonymous && id != asAdmin {
			tokens[id] = e.signUp(t, matrixUsers[id])
		}
	}
	n := 0
	for _, pattern := range patterns {
		row := roomMatrix[pattern]
		allow, ok := privateMatrix[pattern]
		if !ok {
			allow = row.allow
		}
		for _, id := range roomIdentities {
			n++
			method, path := setupRoomCall(t, e, pattern, fmt.Sprintf("p%d", n), true)
			t.Run(fmt.Sprintf("%s as %s", pattern, id), func(t *testing.T) {
				before := e.stored()
				w := e.matrixCall(t, tokens[id], method, path, row.body, row.headers...)
				if slices.Contains(allow, id) {
					if w.Code < 200 || w.Code > 299 {
						t.Fatalf("%s %s = %d %s, want success", method, path, w.Code, w.Body)
					}
					return
				}
				mustRefusal(t, w, id == asAnonymous, false, http.StatusForbidden)
				if after := e.stored(); after != before {
					t.Fatalf("a refused %s %s changed state: %s, then %s", method, path, before, after)
				}
			})
		}
	}
}

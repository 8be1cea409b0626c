package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// Personal API token actors: who calls a token route, relative to the
// tokens of tom, the user whose tokens the sample call is about.
const (
	tAnonymous = "anonymous"
	tSelf      = "their user"
	tOther     = "other user"
	tAdmin     = "admin"
)

// apiTokenRow is the matrix row of one token route: the query and body of
// the sample call about tom's tokens ({id}: one of them) and which login
// sessions may call it; every other session gets 403.
type apiTokenRow struct {
	query, body string
	allow       []string
}

// apiTokenMatrix has a row for every personal API token route. No API
// token, whatever its scopes and whoever holds it, may call one: a leaked
// token cannot mint successors nor hide itself.
var apiTokenMatrix = map[string]apiTokenRow{
	"POST /api/v1/tokens":        {body: `{"name":"more","scopes":["read"]}`, allow: []string{tSelf, tOther, tAdmin}}, // one's own
	"GET /api/v1/tokens":         {query: "?user=tom", allow: []string{tSelf, tAdmin}},
	"DELETE /api/v1/tokens/{id}": {query: "?user=tom", allow: []string{tSelf, tAdmin}},
}

// tokenCallers are the callers of the token matrix: a login session of an
// actor, or a personal API token of theirs with scopes.
var tokenCallers = []struct {
	actor  string
	scopes []string
}{
	{tAnonymous, nil}, {tSelf, nil}, {tOther, nil}, {tAdmin, nil},
	{tSelf, []string{"read"}}, {tSelf, []string{"write"}}, {tSelf, []string{"write:room/x", "write:queue/x"}},
	{tAdmin, []string{"admin"}}, {tAdmin, []string{"write"}},
}

// TestAPITokens_ActorMatrix calls every personal API token route, taken
// from the route table, as each caller: the sessions the row allows
// succeed, other sessions get 403, anonymous callers 401, and every API
// token 403 naming API tokens; refused calls change nothing.
func TestAPITokens_ActorMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	patterns := checkRows(t, e.srv.Routes(), "/api/v1/tokens", "apiTokenMatrix", apiTokenMatrix)
	sessions := map[string]string{tAnonymous: ""}
	sessions[tAdmin] = e.signUp(t, "alice") // the first user: an admin
	sessions[tSelf] = e.signUp(t, "tom")
	sessions[tOther] = e.signUp(t, "otto")
	tokens := map[string]string{}
	for _, c := range tokenCallers {
		if c.scopes != nil {
			tokens[c.actor+fmt.Sprint(c.scopes)], _ = e.mintToken(t, sessions[c.actor], c.scopes...)
		}
	}
	for _, pattern := range patterns {
		row := apiTokenMatrix[pattern]
		for _, c := range tokenCallers {
			t.Run(fmt.Sprintf("%s as %s %v", pattern, c.actor, c.scopes), func(t *testing.T) {
				_, target := e.mintToken(t, sessions[tSelf], "read")
				method, path, _ := strings.Cut(pattern, " ")
				path = strings.ReplaceAll(path, "{id}", target) + row.query
				token := sessions[c.actor]
				if c.scopes != nil {
					token = tokens[c.actor+fmt.Sprint(c.scopes)]
				}
				before := e.stored()
				w := e.matrixCall(t, token, method, path, row.body)
				if c.scopes == nil && slices.Contains(row.allow, c.actor) {
					if w.Code < 200 || w.Code > 299 {
						t.Fatalf("%s %s = %d %s, want success", method, path, w.Code, w.Body)
					}
					return
				}
				mustRefusal(t, w, c.actor == tAnonymous, c.scopes != nil, http.StatusForbidden)
				if after := e.stored(); after != before {
					t.Fatalf("a refused %s %s changed state: %s, then %s", method, path, before, after)
				}
				// The target token still works: a refused revoke did nothing.
				if strings.HasPrefix(pattern, "DELETE") {
					var list struct{ Tokens []apiTokenJSON }
					mustJSON(t, e.call(t, sessions[tSelf], http.MethodGet, "/api/v1/tokens", ""), http.StatusOK, &list)
					if !slices.ContainsFunc(list.Tokens, func(k apiTokenJSON) bool { return k.ID == target }) {
						t.Fatalf("token %s gone after a refused revoke", target)
					}
				}
			})
		}
	}
}

// hookRow is the matrix row of a public incoming webhook route: the
// status of the sample post for each state of the hook's URL. The caller's
// credentials play no part: the secret in the URL is the credential, given
// by the room's owner (or an admin) to whoever runs the bot, so a
// signed-in caller, even one muted or banned in the room, posts as the
// bot, never as themself, and a bad or revoked session token is ignored.
type hookRow struct {
	status map[string]int
}

// Hook URL states of the hook matrix.
const (
	hookRight   = "right secret"
	hookWrong   = "wrong secret"
	hookOther   = "another hook's secret"
	hookRevoked = "revoked hook"
	hookGone    = "deleted room"
	// hookAnnounce is the right secret of a hook of an announcement room:
	// the rule is about members, and the bot is the owner's.
	hookAnnounce = "announcement room"
)

// hookMatrix has a row for every public hook route.
var hookMatrix = map[string]hookRow{
	"POST /api/v1/hooks/{key}/{secret}": {status: map[string]int{
		hookRight: http.StatusCreated, hookWrong: http.StatusNotFound, hookOther: http.StatusNotFound,
		hookRevoked: http.StatusNotFound, hookGone: http.StatusNotFound, hookAnnounce: http.StatusCreated,
	}},
}

// TestHooks_ActorMatrix posts through every public hook route, taken from
// the route table, in each state of the hook's URL as each room identity
// (and with an admin's API token, and a revoked session token): the answer
// depends on the URL alone, a post's sender is the bot, and a refused post
// changes nothing.
func TestHooks_ActorMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	patterns := checkRows(t, e.srv.Routes(), "/api/v1/hooks/", "hookMatrix", hookMatrix)
	tokens := map[string]string{asAnonymous: ""}
	tokens[asAdmin] = e.signUp(t, matrixUsers[asAdmin]) // the first user: an admin
	for _, id := range roomIdentities {
		if id != asAnonymous && id != asAdmin {
			tokens[id] = e.signUp(t, matrixUsers[id])
		}
	}
	tokens["admin's API token"], _ = e.mintToken(t, tokens[asAdmin], "admin")
	tokens["revoked session"] = e.login(t, matrixUsers[asMember])
	mustJSON(t, e.call(t, tokens["revoked session"], http.MethodDelete, "/api/v1/sessions/current", ""), http.StatusNoContent, nil)
	callers := append(slices.Clone(roomIdentities), "admin's API token", "revoked session")
	states := []string{hookRight, hookWrong, hookOther, hookRevoked, hookGone, hookAnnounce}
	n := 0
	for _, pattern := range patterns {
		row := hookMatrix[pattern]
		for _, state := range states {
			for _, caller := range callers {
				n++
				room := fmt.Sprintf("h%d", n)
				path := matrixHookPath(t, e, pattern, room, state)
				t.Run(fmt.Sprintf("%s %s as %s", pattern, state, caller), func(t *testing.T) {
					method, _, _ := strings.Cut(pattern, " ")
					before := e.stored()
					w := e.matrixCall(t, tokens[caller], method, path, `{"text":"from the bot"}`)
					want := row.status[state]
					if want == http.StatusCreated {
						var res chat.PostResult
						mustJSON(t, w, want, &res)
						if res.Sender != chat.BotPrefix+"matrix-hook" {
							t.Fatalf("posted as %q, want the bot", res.Sender)
						}
						return
					}
					mustErrorBody(t, w, want, codeOfStatus(want))
					if after := e.stored(); after != before {
						t.Fatalf("a refused hook post changed state: %s, then %s", before, after)
					}
				})
			}
		}
	}
}

// matrixHookPath sets up room (setupMatrixRoom) with a hook matrix-hook
// and returns the path of pattern for the hook's URL in state.
func matrixHookPath(t *testing.T, e *matrixEnv, pattern, room, state string) string {
	t.Helper()
	ctx := t.Context()
	setupMatrixRoom(t, e.Rooms, room, false)
	h, err := e.Rooms.CreateHook(ctx, "olga", room, "matrix-hook", false)
	if err != nil {
		t.Fatal(err)
	}
	secret := h.Secret
	switch state {
	case hookWrong:
		secret = strings.Repeat("A", len(h.Secret))
	case hookOther:
		other, err := e.Rooms.CreateHook(ctx, "olga", room, "other-hook", false)
		if err != nil {
			t.Fatal(err)
		}
		secret = other.Secret
	case hookRevoked:
		err = e.Rooms.RevokeHook(ctx, "olga", room, h.ID, false)
	case hookGone:
		err = e.Rooms.Delete(ctx, "olga", room, false, "")
	case hookAnnounce:
		on := true
		_, err = e.Rooms.UpdateSettings(ctx, "olga", room, chat.SettingsRequest{Announcement: &on}, false, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	_, path, _ := strings.Cut(pattern, " ")
	return strings.NewReplacer("{key}", h.Key, "{secret}", secret).Replace(path)
}

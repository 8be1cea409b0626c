package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
)

// Room identities of the room permission matrix: who calls a room route,
// relative to the room.
const (
	asAnonymous = "anonymous"
	asNonMember = "non-member"
	asMember    = "member"
	asMuted     = "muted"
	asBanned    = "banned"
	asModerator = "moderator"
	asOwner     = "owner"
	asAdmin     = "admin" // a cluster admin who is not a member
)

var roomIdentities = []string{asAnonymous, asNonMember, asMember, asMuted, asBanned, asModerator, asOwner, asAdmin}

// Usernames of the matrix: one per identity, and those acted upon.
var matrixUsers = map[string]string{
	asAdmin: "alice", asOwner: "olga", asModerator: "mona", asMember: "mel",
	asMuted: "muki", asBanned: "bane", asNonMember: "nora",
}

const (
	target     = "tess" // a plain member that moderation routes act on
	invitee    = "ivan" // holds an invitation (private rooms)
	matrixPass = "matrix-password"
)

// roomRow is the matrix row of one room route: the path values and body of
// the sample call, whether the room is private, and who may call it; every
// other signed-in identity gets 403 and anonymous callers 401.
type roomRow struct {
	user, body string
	private    bool
	allow      []string
	// query and headers complete a call whose body is no JSON (uploads).
	query   string
	headers []string
}

// readers may read a public room; members are its members.
var (
	readers    = []string{asNonMember, asMember, asMuted, asModerator, asOwner, asAdmin}
	members    = []string{asMember, asMuted, asModerator, asOwner}
	posters    = []string{asMember, asModerator, asOwner}
	moderators = []string{asModerator, asOwner, asAdmin}
	owners     = []string{asOwner, asAdmin}
)

// roomMatrix has a row for every route about one room. A route added
// without a row fails TestRooms_PermissionMatrix; TestRooms_TokenRoleMatrix
// crosses the same rows with API token scopes.
var roomMatrix = map[string]roomRow{
	"DELETE /api/v1/rooms/{room}":                               {allow: owners},
	"GET /api/v1/rooms/{room}":                                  {allow: readers},
	"PATCH /api/v1/rooms/{room}":                                {body: `{"topic":"new topic"}`, allow: moderators},
	"POST /api/v1/rooms/{room}/join":                            {allow: []string{asNonMember, asMember, asMuted, asModerator, asOwner, asAdmin}},
	"POST /api/v1/rooms/{room}/leave":                           {allow: []string{asNonMember, asMember, asMuted, asBanned, asModerator, asOwner, asAdmin}},
	"POST /api/v1/rooms/{room}/read":                            {body: `{"seq":1}`, allow: members},
	"GET /api/v1/rooms/{room}/members":                          {allow: readers},
	"POST /api/v1/rooms/{room}/messages":                        {body: `{"text":"hi"}`, allow: posters},
	"GET /api/v1/rooms/{room}/messages":                         {allow: readers},
	"GET /api/v1/rooms/{room}/messages/{seq}":                   {allow: readers},
	"PATCH /api/v1/rooms/{room}/messages/{seq}":                 {body: `{"text":"edited"}`, allow: []string{asMember}}, // its author
	"DELETE /api/v1/rooms/{room}/messages/{seq}":                {allow: []string{asMember, asModerator, asOwner, asAdmin}},
	"PUT /api/v1/rooms/{room}/messages/{seq}/reactions/{emoji}": {allow: posters},
	// Taking back a reaction one never gave is a no-op, but not for the
	// muted, who may not react at all.
	"DELETE /api/v1/rooms/{room}/messages/{seq}/reactions/{emoji}": {allow: posters},
	"GET /api/v1/rooms/{room}/messages/{seq}/thread":               {allow: readers},
	"PUT /api/v1/rooms/{room}/pins/{seq}":                          {allow: posters}, // an event all see: not for the muted
	"DELETE /api/v1/rooms/{room}/pins/{seq}":                       {allow: posters},
	"GET /api/v1/rooms/{room}/pins":                                {allow: readers},
	"PUT /api/v1/rooms/{room}/members/{user}/role":                 {user: target, body: `{"role":"moderator"}`, allow: owners},
	"POST /api/v1/rooms/{room}/members/{user}/kick":                {user: target, body: `{"reason":"matrix"}`, allow: moderators},
	"POST /api/v1/rooms/{room}/members/{user}/ban":                 {user: target, body: `{"duration":60}`, allow: moderators},
	"DELETE /api/v1/rooms/{room}/members/{user}/ban":               {user: "bane", allow: moderators},
	"POST /api/v1/rooms/{room}/members/{user}/mute":                {user: target, body: `{"duration":60}`, allow: moderators},
	"DELETE /api/v1/rooms/{room}/members/{user}/mute":              {user: "muki", allow: moderators},
	"POST /api/v1/rooms/{room}/invites":                            {private: true, body: `{"username":"ivy"}`, allow: moderators},
	"DELETE /api/v1/rooms/{room}/invites/{user}":                   {private: true, user: invitee, allow: moderators},
	"GET /api/v1/rooms/{room}/moderation":                          {allow: moderators},
	"PUT /api/v1/rooms/{room}/legal-hold":                          {allow: []string{asAdmin}},
	"DELETE /api/v1/rooms/{room}/legal-hold":                       {allow: []string{asAdmin}},
	"GET /api/v1/rooms/{room}/export":                              {allow: owners},
	"POST /api/v1/rooms/{room}/hooks":                              {body: `{"name":"matrix-bot"}`, allow: owners},
	"GET /api/v1/rooms/{room}/hooks":                               {allow: owners},
	"DELETE /api/v1/rooms/{room}/hooks/{id}":                       {allow: owners},
	"POST /api/v1/rooms/{room}/outgoing-hooks":                     {body: `{"name":"matrix-out","url":"https://93.184.215.14/hook"}`, allow: owners},
	"GET /api/v1/rooms/{room}/outgoing-hooks":                      {allow: owners},
	"DELETE /api/v1/rooms/{room}/outgoing-hooks/{id}":              {allow: owners},
	"GET /api/v1/rooms/{room}/outgoing-hooks/{id}/deliveries":      {allow: owners},
	"POST /api/v1/rooms/{room}/files": {body: "matrix file", query: "?name=m.txt", headers: []string{"Content-Type", "text/plain"},
		allow: posters}, // files_test.go: who may download
}

// TestRooms_PermissionMatrix calls every room route, taken from the route
// table, as each room identity, on a room of its own set up with an owner,
// a moderator, members, a muted member, a banned user and a message: the
// allowed get a 2xx, the others 401 or 403 and change nothing.
func TestRooms_PermissionMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("about 200 rooms")
	}
	e := newMatrixEnv(t)
	var roomRoutes []string
	for _, r := range e.srv.Routes() {
		if strings.Contains(r.Pattern, " /api/v1/rooms/{room}") {
			roomRoutes = append(roomRoutes, r.Pattern)
			if _, ok := roomMatrix[r.Pattern]; !ok {
				t.Errorf("room route %s has no row in roomMatrix: say who may call it", r.Pattern)
			}
		}
	}
	for p := range roomMatrix {
		if !slices.Contains(roomRoutes, p) {
			t.Errorf("roomMatrix row %s names no route", p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	tokens := map[string]string{}
	tokens[asAdmin] = e.signUp(t, matrixUsers[asAdmin]) // the first user: an admin
	for _, id := range roomIdentities {
		if id != asAnonymous && id != asAdmin {
			tokens[id] = e.signUp(t, matrixUsers[id])
		}
	}
	n := 0
	for _, pattern := range roomRoutes {
		row := roomMatrix[pattern]
		for _, id := range roomIdentities {
			n++
			room := fmt.Sprintf("m%d", n)
			method, path := setupRoomCall(t, e, pattern, room, false)
			t.Run(fmt.Sprintf("%s as %s", pattern, id), func(t *testing.T) {
				before := e.stored()
				var w = e.do(t, method, path, row.body, row.headers...)
				if id != asAnonymous {
					w = e.call(t, tokens[id], method, path, row.body, row.headers...)
				}
				switch {
				case slices.Contains(row.allow, id):
					if w.Code < 200 || w.Code > 299 {
						t.Fatalf("%s %s as %s = %d %s, want success", method, path, id, w.Code, w.Body)
					}
				case id == asAnonymous:
					mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
				default:
					mustErrorBody(t, w, http.StatusForbidden, "forbidden")
				}
				if !slices.Contains(row.allow, id) && e.stored() != before {
					t.Fatalf("a refused %s %s as %s changed state", method, path, id)
				}
			})
		}
	}
}

// setupRoomCall sets up room for a call of the room route pattern
// (setupMatrixRoom, private when its roomMatrix row says so or private is
// set) and returns the call's method and path, every wildcard filled in.
func setupRoomCall(t *testing.T, e *matrixEnv, pattern, room string, private bool) (method, path string) {
	t.Helper()
	row := roomMatrix[pattern]
	seq, hook, outHook := setupMatrixRoom(t, e.Rooms, room, row.private || private)
	method, path, _ = strings.Cut(pattern, " ")
	if strings.Contains(path, "/outgoing-hooks/") {
		hook = outHook
	}
	return method, strings.NewReplacer("{room}", room, "{seq}", fmt.Sprint(seq), "{emoji}", ":tada:", "{user}", row.user, "{id}", hook).Replace(path) + row.query
}

// setupMatrixRoom creates room (private: with matrixPass) owned by olga
// with moderator mona, members mel and tess, muki muted for an hour, bane
// banned, ivan invited (private rooms), an incoming and an outgoing
// webhook, and a message by mel; it returns the message's seq and the
// hooks' ids.
func setupMatrixRoom(t *testing.T, rooms *chat.Service, room string, private bool) (uint64, string, string) {
	t.Helper()
	ctx := t.Context()
	req := chat.CreateRequest{Name: room}
	pass := ""
	if private {
		req.Private, req.Password, pass = true, matrixPass, matrixPass
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("set up %s: %v", room, err)
		}
	}
	_, err := rooms.Create(ctx, "olga", req, "")
	must(err)
	for _, u := range []string{"mona", "mel", "muki", target} {
		_, err := rooms.Join(ctx, u, room, pass, "")
		must(err)
	}
	_, err = rooms.SetRole(ctx, "olga", room, "mona", chat.RoleModerator, false, "")
	must(err)
	_, err = rooms.Moderate(ctx, "olga", room, chat.ModerateRequest{Target: "muki", Action: chat.ActMute, Duration: time.Hour}, false, "")
	must(err)
	_, err = rooms.Moderate(ctx, "olga", room, chat.ModerateRequest{Target: "bane", Action: chat.ActBan}, false, "")
	must(err)
	if private {
		_, err = rooms.Invite(ctx, "olga", room, invitee, false, false, "")
		must(err)
	}
	hook, err := rooms.CreateHook(ctx, "olga", room, "matrix-hook", false)
	must(err)
	out, err := rooms.CreateOutHook(ctx, "olga", room, chat.OutHookRequest{Name: "matrix-out", URL: "https://93.184.215.14/hook"}, false)
	must(err)
	res, err := rooms.Post(ctx, "mel", room, "the matrix message", nil, "")
	must(err)
	return res.Seq, hook.ID, out.ID
}

package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// fileMatrix says who may download a file attached to a message of a
// public room: its members, muted ones included; not a non-member, a
// banned user or an admin who is not a member. Anonymous callers get 401.
var fileMatrix = map[string][]string{
	"GET /api/v1/files/{id}": members,
}

// matrixFile uploads a file of ct to room as mel and attaches it to a
// message (a whisper to mona when whisper is set); it returns its id.
func matrixFile(t *testing.T, rooms *chat.Service, room, name, ct string, whisper bool) string {
	t.Helper()
	f, err := rooms.Upload(t.Context(), "mel", room, chat.UploadRequest{Name: name, ContentType: ct, Size: -1, Body: strings.NewReader("file of " + room)}, "")
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	var to []string
	if whisper {
		to = []string{"mona"}
	}
	if _, err := rooms.PostFiles(t.Context(), "mel", room, "", to, 0, []string{f.ID}, ""); err != nil {
		t.Fatalf("post the file: %v", err)
	}
	return f.ID
}

func TestFiles_PermissionMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	patterns := checkRows(t, e.srv.Routes(), "/api/v1/files", "fileMatrix", fileMatrix)
	tokens := map[string]string{asAdmin: e.signUp(t, matrixUsers[asAdmin])}
	for _, id := range roomIdentities {
		if id != asAnonymous && id != asAdmin {
			tokens[id] = e.signUp(t, matrixUsers[id])
		}
	}
	for i, pattern := range patterns {
		room := fmt.Sprintf("f%d", i)
		setupMatrixRoom(t, e.Rooms, room, false)
		file := matrixFile(t, e.Rooms, room, "a.txt", "text/plain", false)
		method, _, _ := strings.Cut(pattern, " ")
		for _, id := range roomIdentities {
			t.Run(pattern+" as "+id, func(t *testing.T) {
				w := e.matrixCall(t, tokens[id], method, chat.FileURL(file), "")
				switch {
				case slices.Contains(fileMatrix[pattern], id):
					if w.Code != http.StatusOK || w.Body.String() != "file of "+room {
						t.Fatalf("download as %s = %d %q", id, w.Code, w.Body)
					}
				case id == asAnonymous:
					mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
				default:
					mustErrorBody(t, w, http.StatusForbidden, "forbidden")
				}
			})
		}
	}
}

// A file attached to a whisper is read by the whisper's participants only;
// a token scoped to rooms reads the files of those rooms only.
func TestFiles_WhisperAndTokenScopes(t *testing.T) {
	e := newMatrixEnv(t)
	e.signUp(t, "alice")
	mona, tess, mel := e.signUp(t, "mona"), e.signUp(t, target), e.signUp(t, "mel")
	setupMatrixRoom(t, e.Rooms, "whisper", false)
	file := matrixFile(t, e.Rooms, "whisper", "a.txt", "text/plain", true)
	mustJSON(t, e.call(t, mona, http.MethodGet, chat.FileURL(file), ""), http.StatusOK, nil)
	mustErrorBody(t, e.call(t, tess, http.MethodGet, chat.FileURL(file), ""), http.StatusNotFound, "not_found")

	for _, tc := range []struct {
		scopes []string
		ok     bool
	}{
		{[]string{"read:room/whisper"}, true},
		{[]string{"read"}, true},
		{[]string{"read:room/other"}, false},
		{[]string{"write:queue/whisper"}, false},
	} {
		token, _ := e.mintToken(t, mel, tc.scopes...)
		w := e.call(t, token, http.MethodGet, chat.FileURL(file), "")
		if tc.ok != (w.Code == http.StatusOK) || !tc.ok && !strings.Contains(w.Body.String(), "API token") {
			t.Errorf("download with scopes %v = %d %s", tc.scopes, w.Code, w.Body)
		}
	}
	read, _ := e.mintToken(t, mel, "read")
	w := e.call(t, read, http.MethodPost, "/api/v1/rooms/whisper/files?name=b.txt", "x", "Content-Type", "text/plain")
	mustError(t, w, http.StatusForbidden, "forbidden", "API token")
}

// Images of the allow-list are served inline; every other type, SVG and
// HTML included, as an attachment; every file with nosniff, a CSP that
// allows nothing to run, and its length.
func TestFiles_DownloadHeaders(t *testing.T) {
	e := newMatrixEnv(t)
	e.signUp(t, "alice")
	mel := e.signUp(t, "mel")
	setupMatrixRoom(t, e.Rooms, "heads", false)
	for _, tc := range []struct{ ct, disposition string }{
		{"image/png", `inline; filename=pic`},
		{"image/webp", `inline; filename=pic`},
		{"image/svg+xml", `attachment; filename=pic`},
		{"text/html", `attachment; filename=pic`},
		{"application/octet-stream", `attachment; filename=pic`},
	} {
		file := matrixFile(t, e.Rooms, "heads", "pic", tc.ct, false)
		w := e.call(t, mel, http.MethodGet, chat.FileURL(file), "")
		h := w.Result().Header
		if w.Code != http.StatusOK || h.Get("Content-Type") != tc.ct || h.Get("Content-Disposition") != tc.disposition ||
			h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") ||
			h.Get("Content-Length") != fmt.Sprint(len("file of heads")) {
			t.Errorf("%s: %d, headers %v", tc.ct, w.Code, h)
		}
	}
}

// Bad uploads are refused with a 4xx naming the problem and store nothing.
func TestFiles_UploadRefusals(t *testing.T) {
	e := newMatrixEnv(t)
	e.signUp(t, "alice")
	mel := e.signUp(t, "mel")
	setupMatrixRoom(t, e.Rooms, "bad", false)
	for _, tc := range []struct {
		name, query, ct, body string
		status                int
		match                 string
	}{
		{"no content type", "?name=a.txt", "", "x", 400, "Content-Type"},
		{"bad content type", "?name=a.txt", "not a type", "x", 400, "Content-Type"},
		{"no name", "", "text/plain", "x", 400, "name"},
		{"path in name", "?name=../etc/passwd", "text/plain", "x", 400, "path separator"},
		{"control character", "?name=a%07.txt", "text/plain", "x", 400, "name"},
		{"long name", "?name=" + strings.Repeat("a", chat.MaxFileName+1), "text/plain", "x", 400, "at most 255 bytes"},
		{"empty", "?name=a.txt", "text/plain", "", 400, "empty"},
		{"too large", "?name=a.txt", "text/plain", strings.Repeat("x", chat.DefaultMaxFileSize+1), 413, "limit is 10485760 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.stored()
			var h []string
			if tc.ct != "" {
				h = []string{"Content-Type", tc.ct}
			}
			w := e.call(t, mel, http.MethodPost, "/api/v1/rooms/bad/files"+tc.query, tc.body, h...)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.match) {
				t.Fatalf("= %d %s, want %d naming %q", w.Code, w.Body, tc.status, tc.match)
			}
			if e.stored() != before {
				t.Fatal("a refused upload changed state")
			}
		})
	}
}

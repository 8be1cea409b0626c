package api

import (
	"net/http"
	"testing"
)

// TestAPI_UserTextRule checks that every domain refuses, with a 400 naming
// the character, the control and bidirectional formatting characters that
// would act on other users' terminals, and that a refused request changes
// nothing; and that message text of white space only is refused.
func TestAPI_UserTextRule(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice")
	bob := e.signUp(t, "bob")
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms", `{"name":"ops"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/ops/join", ""), http.StatusOK, nil)
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`), http.StatusCreated, nil)

	const esc = "control character U+001B not allowed"
	before := e.stored()
	for _, tc := range []struct {
		name, method, path, body, want string
	}{
		{"message with escapes", "POST", "/api/v1/rooms/ops/messages",
			`{"text":"\u001b[2J\u001b[H[10:00:00] bob: fake\u001b]0;title\u0007"}`, "text: " + esc},
		{"message with a carriage return", "POST", "/api/v1/rooms/ops/messages", `{"text":"a\rb"}`, "text: control character U+000D not allowed"},
		{"message with C1", "POST", "/api/v1/rooms/ops/messages", `{"text":"a\u009b2J"}`, "text: control character U+009B not allowed"},
		{"message with an override", "POST", "/api/v1/rooms/ops/messages", `{"text":"abc\u202edef"}`,
			"text: bidirectional formatting character U+202E not allowed"},
		{"message of white space", "POST", "/api/v1/rooms/ops/messages", `{"text":" \n\t "}`, "text is blank"},
		{"whisper to an escape", "POST", "/api/v1/rooms/ops/messages", `{"text":"hi","to":["bob\u001b"]}`, "to: " + esc},
		{"room name", "POST", "/api/v1/rooms", `{"name":"ops\u001b[2J"}`, "room name: " + esc},
		{"room name with an isolate", "POST", "/api/v1/rooms", `{"name":"ops\u2066"}`,
			"room name: bidirectional formatting character U+2066 not allowed"},
		{"room name in the path", "POST", "/api/v1/rooms/ops%1B%5B2J/join", "", "room name: " + esc},
		{"username", "POST", "/api/v1/users", `{"username":"eve\u001b[2J","password":"password-eve"}`, "username: " + esc},
		{"queue name", "POST", "/api/v1/queues", `{"name":"jobs\u001b"}`, "queue name: " + esc},
		{"queue name in the path", "POST", "/api/v1/queues/jobs%1B/messages", `{"body":"x"}`, "queue name: " + esc},
		{"queue receiver", "POST", "/api/v1/queues/jobs/messages", `{"body":"x","to":"bob\u0085"}`, "to: control character U+0085 not allowed"},
		{"queue sender filter", "POST", "/api/v1/queues/jobs/receive", `{"from":"bob\u001b"}`, "from: " + esc},
		{"link url", "POST", "/api/v1/links", `{"url":"https://example.com/\u001b[2J"}`, "url: " + esc},
		{"link url with an override", "POST", "/api/v1/links", `{"url":"https://example.com/\u202egpj.exe"}`,
			"url: bidirectional formatting character U+202E not allowed"},
		{"link code", "POST", "/api/v1/links", `{"url":"https://example.com/","code":"docs\u001b"}`, "code: " + esc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustError(t, e.call(t, bob, tc.method, tc.path, tc.body), http.StatusBadRequest, "invalid", tc.want)
		})
	}
	if after := e.stored(); after != before {
		t.Fatalf("refused requests changed state: %s, then %s", before, after)
	}

	t.Run("accepted", func(t *testing.T) {
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/ops/messages", `{"text":"line one\n\tline two"}`), http.StatusCreated, nil)
		// Queue bodies are opaque bytes: escapes are kept.
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"\u001b[2J"}`), http.StatusCreated, nil)
	})
}

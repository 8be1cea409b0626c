package chat_test

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// hookPost posts text through h with secret.
func hookPost(s *chat.Service, h chat.Hook, secret, name, text string) (chat.PostResult, error) {
	return s.PostHook(ctx, chat.HookPostRequest{Key: h.Key, Secret: secret, Name: name, Text: text})
}

func mustHook(t testing.TB, s *chat.Service, user, room, name string) chat.Hook {
	t.Helper()
	h, err := s.CreateHook(ctx, user, room, name, false)
	if err != nil {
		t.Fatalf("CreateHook(%s, %s): %v", user, room, err)
	}
	return h
}

// lastSeq is the room's last seq as its owner reads it.
func lastSeq(t testing.TB, s *chat.Service, room string) uint64 {
	t.Helper()
	r, _, err := s.Room(ctx, "alice", room, false)
	if err != nil {
		t.Fatal(err)
	}
	return r.LastSeq
}

func TestService_Hooks(t *testing.T) {
	s, _ := newService(t, 2)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	mustJoin(t, s, "bob", "ops", "")

	t.Run("only the owner or an admin manages hooks", func(t *testing.T) {
		_, err := s.CreateHook(ctx, "bob", "ops", "ci", false)
		wantCode(t, err, errs.Forbidden)
		_, err = s.Hooks(ctx, "bob", "ops", false)
		wantCode(t, err, errs.Forbidden)
		h, err := s.CreateHook(ctx, "root", "ops", "by admin", true)
		if err != nil || h.Creator != "root" {
			t.Fatalf("admin CreateHook = %+v, %v", h, err)
		}
		wantCode(t, s.RevokeHook(ctx, "bob", "ops", h.ID, false), errs.Forbidden)
		if err := s.RevokeHook(ctx, "root", "ops", h.ID, true); err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateHook(ctx, "alice", "nonesuch", "ci", false)
		wantCode(t, err, errs.NotFound)
	})

	h := mustHook(t, s, "Alice", "OPS", "Deploy Bot")
	if h.Room != "ops" || h.Key != "ops."+h.ID || len(h.Secret) != 43 || h.Creator != "Alice" {
		t.Fatalf("hook %+v", h)
	}

	t.Run("posts as the bot, never as a user", func(t *testing.T) {
		res, err := hookPost(s, h, h.Secret, "", "deployed v1.2")
		if err != nil || res.Sender != "hook:Deploy Bot" || !chat.IsBot(res.Sender) {
			t.Fatalf("PostHook = %+v, %v", res, err)
		}
		res, err = hookPost(s, h, h.Secret, "alice", "I am alice")
		if err != nil || res.Sender != "hook:alice" {
			t.Fatalf("PostHook as alice = %+v, %v", res, err)
		}
		evs, _, err := s.History(ctx, "bob", "ops", chat.HistoryQuery{}, false)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.Sender != "hook:alice" || last.Kind != chat.KindMessage || last.Text != "I am alice" {
			t.Fatalf("history ends with %+v", last)
		}
		// No user can be named like a bot: ':' is no username byte.
		_, err = s.Create(ctx, "hook:alice", chat.CreateRequest{Name: "x"}, "")
		wantCode(t, err, errs.Invalid)
	})

	t.Run("a wrong secret or key is refused and posts nothing", func(t *testing.T) {
		before := lastSeq(t, s, "ops")
		other := mustHook(t, s, "alice", "ops", "other")
		for name, req := range map[string]chat.HookPostRequest{
			"wrong secret":      {Key: h.Key, Secret: other.Secret, Text: "x"},
			"short secret":      {Key: h.Key, Secret: "abc", Text: "x"},
			"another room":      {Key: "general." + h.ID, Secret: h.Secret, Text: "x"},
			"malformed key":     {Key: "ops", Secret: h.Secret, Text: "x"},
			"upper-case key":    {Key: "OPS." + h.ID, Secret: h.Secret, Text: "x"},
			"no secret":         {Key: h.Key, Text: "x"},
			"another hook's id": {Key: other.Key, Secret: h.Secret, Text: "x"},
		} {
			_, err := s.PostHook(ctx, req)
			if errs.CodeOf(err) != errs.NotFound || !strings.Contains(err.Error(), "no such hook") {
				t.Fatalf("%s: %v", name, err)
			}
			if err := s.AuthHook(ctx, req.Key, req.Secret); errs.CodeOf(err) != errs.NotFound {
				t.Fatalf("%s: AuthHook = %v", name, err)
			}
		}
		if err := s.AuthHook(ctx, h.Key, h.Secret); err != nil {
			t.Fatalf("AuthHook of the right secret: %v", err)
		}
		if got := lastSeq(t, s, "ops"); got != before {
			t.Fatalf("refused posts moved the last seq from %d to %d", before, got)
		}
		wantCode(t, s.RevokeHook(ctx, "alice", "ops", other.ID, false), "")
	})

	t.Run("a bad payload is refused naming the problem and posts nothing", func(t *testing.T) {
		before := lastSeq(t, s, "ops")
		for _, tc := range []struct{ name, text, user, want string }{
			{"empty", "", "", "text is empty"},
			{"blank", "  \n", "", "blank"},
			{"too long", strings.Repeat("x", 65), "", "limit is 64"},
			{"control", "a\x1bb", "", "text"},
			{"blank username", "x", "  ", "username"},
			{"long username", "x", strings.Repeat("b", chat.MaxBotName+1), "username"},
			{"two-line username", "x", "a\nb", "username"},
		} {
			_, err := hookPost(s, h, h.Secret, tc.user, tc.text)
			if c := errs.CodeOf(err); (c != errs.Invalid && c != errs.TooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: %v, want it to name %q", tc.name, err, tc.want)
			}
		}
		if got := lastSeq(t, s, "ops"); got != before {
			t.Fatalf("refused posts moved the last seq from %d to %d", before, got)
		}
	})

	t.Run("listed without secrets; revoked: refused at once", func(t *testing.T) {
		list, err := s.Hooks(ctx, "alice", "ops", false)
		if err != nil || len(list) != 1 || list[0].ID != h.ID || list[0].Secret != "" || list[0].Name != "Deploy Bot" {
			t.Fatalf("Hooks = %+v, %v", list, err)
		}
		if err := s.RevokeHook(ctx, "alice", "ops", h.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err = hookPost(s, h, h.Secret, "", "after revoke")
		wantCode(t, err, errs.NotFound)
		wantCode(t, s.RevokeHook(ctx, "alice", "ops", h.ID, false), errs.NotFound)
		wantCode(t, s.RevokeHook(ctx, "alice", "ops", "nothex", false), errs.Invalid)
		if list, _ := s.Hooks(ctx, "alice", "ops", false); len(list) != 0 {
			t.Fatalf("after revoking: %+v", list)
		}
	})

	t.Run("a deleted room's hooks are gone, also when the name comes back", func(t *testing.T) {
		mustCreate(t, s, "alice", chat.CreateRequest{Name: "tmp"})
		h := mustHook(t, s, "alice", "tmp", "bot")
		if err := s.Delete(ctx, "alice", "tmp", false, ""); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, "alice", chat.CreateRequest{Name: "tmp"})
		_, err := hookPost(s, h, h.Secret, "", "x")
		wantCode(t, err, errs.NotFound)
		if list, err := s.Hooks(ctx, "alice", "tmp", false); err != nil || len(list) != 0 {
			t.Fatalf("hooks of the new room: %+v, %v", list, err)
		}
	})

	t.Run("at most MaxHooksPerRoom", func(t *testing.T) {
		mustCreate(t, s, "alice", chat.CreateRequest{Name: "many"})
		for range chat.MaxHooksPerRoom {
			mustHook(t, s, "alice", "many", "b")
		}
		_, err := s.CreateHook(ctx, "alice", "many", "b", false)
		wantCode(t, err, errs.Conflict)
	})

	t.Run("a retried post with its idempotency key posts once", func(t *testing.T) {
		h := mustHook(t, s, "alice", "ops", "ci")
		req := chat.HookPostRequest{Key: h.Key, Secret: h.Secret, Text: "once", IdempotencyKey: "k1"}
		a, err1 := s.PostHook(ctx, req)
		b, err2 := s.PostHook(ctx, req)
		if err1 != nil || err2 != nil || a != b {
			t.Fatalf("retry: %+v %v, %+v %v", a, err1, b, err2)
		}
	})
}

// Hook commands wait until every node speaks HookProtocol.
func TestService_HooksWaitForTheUpgrade(t *testing.T) {
	protocol := 1
	r := statetest.NewReplicator(1, chat.StateMachine{})
	s := chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher(), ClusterProtocol: func() int { return protocol }})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	_, err := s.CreateHook(ctx, "alice", "ops", "ci", false)
	wantCode(t, err, errs.UpgradeInProgress)
	if e, ok := err.(*errs.Error); !ok || !e.Retryable {
		t.Fatalf("%v is not retryable", err)
	}
	protocol = chat.HookProtocol
	h := mustHook(t, s, "alice", "ops", "ci")
	protocol = 1
	_, err = hookPost(s, h, h.Secret, "", "x")
	wantCode(t, err, errs.UpgradeInProgress)
	wantCode(t, s.RevokeHook(ctx, "alice", "ops", h.ID, false), errs.UpgradeInProgress)
}

package chat_test

import (
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

func ptr[T any](v T) *T { return &v }

// While a node of the cluster speaks protocol 1, nothing new is proposed:
// the old replicas could not apply it.
func TestService_ModerationWaitsForTheUpgrade(t *testing.T) {
	protocol := 1
	r := statetest.NewReplicator(2, chat.StateMachine{})
	s := chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher(), ClusterProtocol: func() int { return protocol }})
	mustCreate(t, s, "owner", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	mustCreate(t, s, "owner", chat.CreateRequest{Name: "p", Private: true, Password: "secret words"})
	calls := []struct {
		name string
		call func() error
	}{
		{"role", func() error {
			_, err := s.SetRole(ctx, "owner", "r", "bob", chat.RoleModerator, false, "")
			return err
		}},
		{"invite", func() error { _, err := s.Invite(ctx, "owner", "p", "carol", false, false, ""); return err }},
		{"kick", func() error {
			_, err := s.Moderate(ctx, "owner", "r", chat.ModerateRequest{Target: "bob", Action: chat.ActKick}, false, "")
			return err
		}},
		{"settings", func() error {
			_, err := s.UpdateSettings(ctx, "owner", "r", chat.SettingsRequest{Topic: ptr("t")}, false, "")
			return err
		}},
		{"invite-only room", func() error {
			_, err := s.Create(ctx, "owner", chat.CreateRequest{Name: "club", InviteOnly: true}, "")
			return err
		}},
	}
	for _, c := range calls {
		err := c.call()
		wantCode(t, err, errs.UpgradeInProgress)
		var e *errs.Error
		if !errors.As(err, &e) || !e.Retryable {
			t.Fatalf("%s: %v is not retryable", c.name, err)
		}
	}
	protocol = 2
	for _, c := range calls {
		if err := c.call(); err != nil {
			t.Fatalf("%s at protocol 2: %v", c.name, err)
		}
	}
}

func TestService_InvitedJoinWithoutPassword(t *testing.T) {
	s, _ := newService(t, 2)
	mustCreate(t, s, "owner", chat.CreateRequest{Name: "pw", Private: true, Password: "correct horse"})
	if _, err := s.Join(ctx, "bob", "pw", "", ""); errs.CodeOf(err) != errs.Forbidden {
		t.Fatalf("join without password nor invitation = %v", err)
	}
	if _, err := s.Invite(ctx, "owner", "pw", "bob", false, false, ""); err != nil {
		t.Fatal(err)
	}
	mustJoin(t, s, "bob", "pw", "")

	room, err := s.UpdateSettings(ctx, "owner", "pw", chat.SettingsRequest{Access: ptr("invite")}, false, "")
	if err != nil || !room.InviteOnly {
		t.Fatalf("settings = %+v, %v", room, err)
	}
	_, err = s.Join(ctx, "carol", "pw", "correct horse", "")
	wantCode(t, err, errs.Forbidden)

	room, err = s.UpdateSettings(ctx, "owner", "pw", chat.SettingsRequest{Access: ptr("password"), Password: "battery staple"}, false, "")
	if err != nil || room.InviteOnly || !room.Private {
		t.Fatalf("settings = %+v, %v", room, err)
	}
	mustJoin(t, s, "carol", "pw", "battery staple")
}

func TestService_ModerationChecks(t *testing.T) {
	s, _ := newService(t, 1)
	mustCreate(t, s, "owner", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	cases := []struct {
		name string
		err  error
	}{
		{"unknown role", func() error { _, err := s.SetRole(ctx, "owner", "r", "bob", "king", false, ""); return err }()},
		{"bad target", func() error { _, err := s.Invite(ctx, "owner", "r", "no spaces", false, false, ""); return err }()},
		{"mute without duration", func() error {
			_, err := s.Moderate(ctx, "owner", "r", chat.ModerateRequest{Target: "bob", Action: chat.ActMute}, false, "")
			return err
		}()},
		{"kick with duration", func() error {
			_, err := s.Moderate(ctx, "owner", "r", chat.ModerateRequest{Target: "bob", Action: chat.ActKick, Duration: time.Hour}, false, "")
			return err
		}()},
		{"nothing to change", func() error {
			_, err := s.UpdateSettings(ctx, "owner", "r", chat.SettingsRequest{}, false, "")
			return err
		}()},
		{"slow mode too long", func() error {
			_, err := s.UpdateSettings(ctx, "owner", "r", chat.SettingsRequest{SlowMode: ptr(-1)}, false, "")
			return err
		}()},
		{"unknown access", func() error {
			_, err := s.UpdateSettings(ctx, "owner", "r", chat.SettingsRequest{Access: ptr("secret")}, false, "")
			return err
		}()},
		{"control character in topic", func() error {
			_, err := s.UpdateSettings(ctx, "owner", "r", chat.SettingsRequest{Topic: ptr("a\x07b")}, false, "")
			return err
		}()},
	}
	for _, c := range cases {
		if errs.CodeOf(c.err) != errs.Invalid {
			t.Errorf("%s: %v, want invalid", c.name, c.err)
		}
	}
	members, _, err := s.Members(ctx, "bob", "r", false)
	if err != nil || len(members) != 2 || members[0].Role != chat.RoleMember || members[1].Role != chat.RoleOwner {
		t.Fatalf("members = %+v, %v", members, err)
	}
}

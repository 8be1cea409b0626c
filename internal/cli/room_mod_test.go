package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The moderation commands against a node: roles, settings, invitations,
// mute, kick, ban and the moderation log.
func TestRoomModerationCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	olga := cliAs{t, ctx, url, signUpAs(t, url, "olga")}
	mona := cliAs{t, ctx, url, signUpAs(t, url, "mona")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}

	olga.ok("room", "create", "town")
	mona.ok("room", "join", "town")
	bob.ok("room", "join", "town")
	if got := olga.ok("room", "role", "town", "mona", "moderator"); !strings.HasPrefix(got, "mona is now a moderator of town (seq ") {
		t.Errorf("role printed %q", got)
	}
	mona.fails("forbidden", "room", "role", "town", "bob", "moderator")
	if r := olga.run("", "room", "role", "town", "bob", "king"); r.code != 2 {
		t.Errorf("an unknown role = %+v, want a usage error", r)
	}
	if !regexp.MustCompile(`(?m)^mona\s+moderator\s`).MatchString(bob.ok("room", "members", "town")) {
		t.Error("members do not show mona as a moderator")
	}

	settings := mona.ok("room", "settings", "town", "--topic", "Town news")
	if !regexp.MustCompile(`(?m)^topic\s+Town news$`).MatchString(settings) {
		t.Errorf("settings printed:\n%s", settings)
	}
	mona.fails("forbidden", "room", "settings", "town", "--announcement")
	olga.ok("room", "settings", "town", "--announcement", "--max-members", "10")
	bob.fails("forbidden", "room", "post", "town", "may I?")
	mona.ok("room", "post", "town", "news from the moderator")
	olga.ok("room", "settings", "town", "--announcement=false")
	if got := bob.ok("room", "settings", "town"); !regexp.MustCompile(`(?m)^announcement\s+no$`).MatchString(got) || !strings.Contains(got, "3 of 10") {
		t.Errorf("settings as read by bob:\n%s", got)
	}

	if r := mona.run("", "room", "mute", "town", "bob"); r.code != 2 {
		t.Errorf("mute without --for = %+v, want a usage error", r)
	}
	mona.ok("room", "mute", "town", "bob", "--for", "10m", "--reason", "flooding")
	bob.fails("forbidden", "room", "post", "town", "hello?")
	mona.ok("room", "mute", "town", "bob", "--lift")
	bob.ok("room", "post", "town", "thanks")

	mona.ok("room", "kick", "town", "bob", "--reason", "off topic")
	bob.ok("room", "join", "town")
	mona.ok("room", "ban", "town", "bob", "--reason", "spam")
	bob.fails("forbidden", "room", "history", "town")
	bob.fails("forbidden", "room", "join", "town")

	log := mona.ok("room", "moderation", "town")
	for _, want := range []string{"ban  ", "for good", "* olga made mona a moderator", "* mona muted bob until", ": flooding",
		"* mona removed bob: off topic", "* mona banned bob for good: spam", "* olga changed the announcement, max_members"} {
		if !strings.Contains(log, want) {
			t.Errorf("moderation log lacks %q:\n%s", want, log)
		}
	}
	bob.fails("forbidden", "room", "moderation", "town")

	if got := olga.ok("room", "create", "club", "--invite-only"); got != "created invitation-only room club\n" {
		t.Errorf("create --invite-only printed %q", got)
	}
	mona.fails("forbidden", "room", "join", "club")
	olga.ok("room", "invite", "club", "mona")
	mona.ok("room", "join", "club")
	olga.ok("room", "role", "club", "mona", "owner")
	if !regexp.MustCompile(`(?m)^mona\s+owner\s`).MatchString(olga.ok("room", "members", "club")) {
		t.Error("the ownership did not move to mona")
	}

	// Retention (the owner's) and legal hold (olga signed up first: an admin).
	mona.fails("forbidden", "room", "settings", "town", "--retention-days", "7")
	if r := olga.run("", "room", "settings", "town", "--retention-days", "-3"); r.code != 2 {
		t.Errorf("--retention-days -3 = %+v, want a usage error", r)
	}
	got := olga.ok("room", "settings", "town", "--retention-days", "-1", "--retention-messages", "500")
	for _, want := range []string{`(?m)^keep events\s+for ever$`, `(?m)^keep messages\s+the newest 500$`, `(?m)^legal hold\s+no$`} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("settings lack %s:\n%s", want, got)
		}
	}
	mona.fails("forbidden", "room", "legal-hold", "town", "on")
	if got := olga.ok("room", "legal-hold", "town", "on"); got != "room town is under legal hold\n" {
		t.Errorf("legal-hold on printed %q", got)
	}
	if !regexp.MustCompile(`(?m)^legal hold\s+yes$`).MatchString(mona.ok("room", "settings", "town")) {
		t.Error("settings do not show the legal hold")
	}
	olga.fails("conflict", "room", "delete", "town")
	if !strings.Contains(olga.ok("room", "moderation", "town"), "* olga placed the room under legal hold") {
		t.Error("the moderation log lacks the legal hold")
	}
	olga.ok("room", "legal-hold", "town", "off")
}

package chat

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// modFixture is a public room "r" owned by owner, with moderator mod and
// members bob and carol.
func modFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.create("r", "owner")
	for _, u := range []string{"mod", "bob", "carol"} {
		f.join("r", u)
	}
	f.ok(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "mod", Role: RoleModerator}))
	return f
}

func (f *fixture) moderate(m Moderate) (Result, error) {
	f.t.Helper()
	if m.Room == "" {
		m.Room = "r"
	}
	return f.apply(EncodeModerate(m))
}

func (f *fixture) roles(room string) map[string]string {
	f.t.Helper()
	ms, err := Members(f.w, room)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.Username] = m.Role
	}
	return out
}

func (f *fixture) isMember(room, user string) bool {
	f.t.Helper()
	_, member, err := getMember(f.w, room, user)
	if err != nil {
		f.t.Fatal(err)
	}
	return member
}

func (f *fixture) lastEvent(room string) Event {
	f.t.Helper()
	evs := f.events(room)
	return evs[len(evs)-1]
}

func TestModeration_Roles(t *testing.T) {
	f := modFixture(t)
	if got := f.roles("r"); got["owner"] != RoleOwner || got["mod"] != RoleModerator || got["bob"] != RoleMember {
		t.Fatalf("roles = %v", got)
	}
	t.Run("only the owner or an admin changes roles", func(t *testing.T) {
		for _, u := range []string{"mod", "bob", "stranger"} {
			_, err := f.apply(EncodeSetRole(SetRole{Room: "r", User: u, Target: "carol", Role: RoleModerator}))
			wantCode(t, err, errs.Forbidden)
		}
		f.ok(EncodeSetRole(SetRole{Room: "r", User: "root", Admin: true, Target: "carol", Role: RoleModerator}))
		if ev := f.lastEvent("r"); ev.Kind != KindRole || ev.Sender != "root" || ev.User != "carol" || ev.Role != RoleModerator {
			t.Fatalf("role event = %+v", ev)
		}
		f.ok(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "carol", Role: RoleMember}))
		if got := f.roles("r")["carol"]; got != RoleMember {
			t.Fatalf("carol is %q after the revoke", got)
		}
	})
	t.Run("roles go to members only", func(t *testing.T) {
		_, err := f.apply(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "stranger", Role: RoleModerator}))
		wantCode(t, err, errs.NotFound)
		_, err = f.apply(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "owner", Role: RoleMember}))
		wantCode(t, err, errs.Conflict)
	})
	t.Run("ownership transfer", func(t *testing.T) {
		f.ok(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "bob", Role: RoleOwner}))
		if f.room("r").Owner != "bob" {
			t.Fatalf("owner = %q", f.room("r").Owner)
		}
		if got := f.roles("r"); got["bob"] != RoleOwner || got["owner"] != RoleModerator {
			t.Fatalf("roles after the transfer = %v", got)
		}
		// The previous owner lost the owner's powers.
		_, err := f.apply(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "carol", Role: RoleModerator}))
		wantCode(t, err, errs.Forbidden)
		_, err = f.apply(EncodeDeleteRoom(DeleteRoom{Room: "r", User: "owner"}))
		wantCode(t, err, errs.Forbidden)
	})
}

func TestModeration_Mute(t *testing.T) {
	f := modFixture(t)
	msg := f.post("r", "carol", "hello").Seq
	own := f.post("r", "bob", "mine").Seq
	pinned := f.post("r", "carol", "pin me").Seq
	f.ok(EncodePin(Pin{Room: "r", User: "carol", Seq: pinned}))
	start := f.now
	f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "bob", Action: ActMute, DurationMs: 60000, Reason: "calm down"}))
	ev := f.lastEvent("r")
	if ev.Kind != KindMute || ev.Sender != "mod" || ev.User != "bob" || ev.Reason != "calm down" || ev.Until != start+60000 || ev.Text != "" {
		t.Fatalf("mute event = %+v", ev)
	}
	t.Run("a muted member cannot post, react, edit, pin or unpin", func(t *testing.T) {
		before := len(f.events("r"))
		_, err := f.apply(EncodePost(Post{Room: "r", User: "bob", Text: "hi"}))
		wantCode(t, err, errs.Forbidden)
		_, err = f.apply(EncodeReact(React{Room: "r", User: "bob", Seq: msg, Emoji: "👍"}))
		wantCode(t, err, errs.Forbidden)
		_, err = f.apply(EncodeEdit(Edit{Room: "r", User: "bob", Seq: own, Text: "edited"}))
		wantCode(t, err, errs.Forbidden)
		_, err = f.apply(EncodePin(Pin{Room: "r", User: "bob", Seq: msg}))
		wantCode(t, err, errs.Forbidden)
		_, err = f.apply(EncodePin(Pin{Room: "r", User: "bob", Seq: pinned, Undo: true}))
		wantCode(t, err, errs.Forbidden)
		if after := len(f.events("r")); after != before {
			t.Fatalf("refused commands appended %d events", after-before)
		}
	})
	t.Run("but can read", func(t *testing.T) {
		if _, err := History(f.w, "r", "bob", HistoryQuery{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the mute ends at the command time past its duration", func(t *testing.T) {
		f.now = start + 60000 - 1
		_, err := f.apply(EncodePost(Post{Room: "r", User: "bob", Text: "hi"}))
		wantCode(t, err, errs.Forbidden)
		f.now = start + 60000
		f.post("r", "bob", "I am back")
	})
	t.Run("unmute", func(t *testing.T) {
		f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "bob", Action: ActMute, DurationMs: 60000}))
		f.ok(EncodeModerate(Moderate{Room: "r", User: "owner", Target: "bob", Action: ActUnmute}))
		f.post("r", "bob", "unmuted")
		_, err := f.moderate(Moderate{User: "owner", Target: "bob", Action: ActUnmute})
		wantCode(t, err, errs.NotFound)
	})
	t.Run("a mute needs a duration", func(t *testing.T) {
		_, err := f.moderate(Moderate{User: "mod", Target: "bob", Action: ActMute})
		wantCode(t, err, errs.Invalid)
	})
}

func TestModeration_Ban(t *testing.T) {
	f := modFixture(t)
	start := f.now
	f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "bob", Action: ActBan, DurationMs: 10000, Reason: "spam"}))
	if f.isMember("r", "bob") || f.room("r").Members != 3 {
		t.Fatalf("bob is still a member after the ban (members %d)", f.room("r").Members)
	}
	t.Run("a banned user can neither rejoin nor read", func(t *testing.T) {
		_, err := f.apply(EncodeJoin(Join{Room: "r", User: "bob"}))
		wantCode(t, err, errs.Forbidden)
		_, err = checkReadAt(f.w, "r", "bob", start+9999)
		wantCode(t, err, errs.Forbidden)
		_, err = History(f.w, "r", "BOB", HistoryQuery{}) // a ban for 10 s from 1970 is over by the wall clock
		if err != nil {
			t.Fatalf("history after the ban ended: %v", err)
		}
	})
	t.Run("the ban ends at its expiry", func(t *testing.T) {
		if _, err := checkReadAt(f.w, "r", "bob", start+10000); err != nil {
			t.Fatal(err)
		}
		f.now = start + 10000
		f.join("r", "bob")
	})
	t.Run("a ban for good, lifted by unban", func(t *testing.T) {
		f.ok(EncodeModerate(Moderate{Room: "r", User: "owner", Target: "bob", Action: ActBan}))
		f.now += 1 << 40
		_, err := f.apply(EncodeJoin(Join{Room: "r", User: "bob"}))
		wantCode(t, err, errs.Forbidden)
		_, err = History(f.w, "r", "bob", HistoryQuery{})
		wantCode(t, err, errs.Forbidden)
		f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "bob", Action: ActUnban}))
		f.join("r", "bob")
	})
	t.Run("a non-member can be banned ahead", func(t *testing.T) {
		f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "troll", Action: ActBan}))
		_, err := f.apply(EncodeJoin(Join{Room: "r", User: "Troll"}))
		wantCode(t, err, errs.Forbidden)
	})
}

func TestModeration_WhoActsOnWhom(t *testing.T) {
	cases := []struct {
		name   string
		actor  string
		admin  bool
		target string
		action ModAction
		want   errs.Code // "" for success
	}{
		{"member cannot kick", "bob", false, "carol", ActKick, errs.Forbidden},
		{"stranger cannot ban", "stranger", false, "carol", ActBan, errs.Forbidden},
		{"moderator kicks a member", "mod", false, "carol", ActKick, ""},
		{"moderator cannot kick a moderator", "mod", false, "mod2", ActKick, errs.Forbidden},
		{"moderator cannot ban the owner", "mod", false, "owner", ActBan, errs.Forbidden},
		{"owner kicks a moderator", "owner", false, "mod2", ActKick, ""},
		{"admin bans a moderator", "root", true, "mod2", ActBan, ""},
		{"admin cannot mute the owner", "root", true, "owner", ActMute, errs.Forbidden},
		{"nobody kicks themselves", "mod", false, "mod", ActKick, errs.Invalid},
		{"kick needs a member", "mod", false, "stranger", ActKick, errs.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := modFixture(t)
			f.join("r", "mod2")
			f.ok(EncodeSetRole(SetRole{Room: "r", User: "owner", Target: "mod2", Role: RoleModerator}))
			before := dump(t, f.w)
			_, err := f.moderate(Moderate{User: tc.actor, Admin: tc.admin, Target: tc.target, Action: tc.action, DurationMs: 1000})
			if tc.want != "" {
				wantCode(t, err, tc.want)
				if dump(t, f.w) != before {
					t.Fatal("a refused moderation changed the state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev := f.lastEvent("r"); ev.Sender != tc.actor || ev.User != tc.target {
				t.Fatalf("event = %+v", ev)
			}
		})
	}
}

func TestModeration_Kick(t *testing.T) {
	f := modFixture(t)
	f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "Bob", Action: ActKick, Reason: "off topic"}))
	if f.isMember("r", "bob") {
		t.Fatal("bob is still a member")
	}
	if ev := f.lastEvent("r"); ev.Kind != KindKick || ev.User != "bob" || ev.Reason != "off topic" {
		t.Fatalf("kick event = %+v", ev)
	}
	f.join("r", "bob") // a kick is no ban
}

func TestModeration_Invitations(t *testing.T) {
	f := newFixture(t)
	f.ok(EncodeCreateRoom(CreateRoom{Room: "club", Owner: "owner", Private: true, InviteOnly: true, MaxMembers: 10}))
	if rm := f.room("club"); !rm.InviteOnly || !rm.Private {
		t.Fatalf("room = %+v", rm)
	}
	_, err := f.apply(EncodeJoin(Join{Room: "club", User: "bob"}))
	wantCode(t, err, errs.Forbidden)
	_, err = f.apply(EncodeJoin(Join{Room: "club", User: "bob", PasswordHash: "guess"}))
	wantCode(t, err, errs.Forbidden)

	_, err = f.apply(EncodeInvite(Invite{Room: "club", User: "carol", Target: "bob"}))
	wantCode(t, err, errs.Forbidden) // carol is no member, let alone a moderator
	f.ok(EncodeInvite(Invite{Room: "club", User: "owner", Target: "bob"}))
	if ev := f.lastEvent("club"); ev.Kind != KindInvite || ev.User != "bob" || ev.Sender != "owner" {
		t.Fatalf("invite event = %+v", ev)
	}
	f.join("club", "bob")
	if !f.isMember("club", "bob") {
		t.Fatal("the invited user did not join")
	}
	// Joining used the invitation up.
	f.ok(EncodeLeave(Leave{Room: "club", User: "bob"}))
	_, err = f.apply(EncodeJoin(Join{Room: "club", User: "bob"}))
	wantCode(t, err, errs.Forbidden)

	t.Run("in a password room the invited join without it", func(t *testing.T) {
		f.ok(EncodeCreateRoom(CreateRoom{Room: "pw", Owner: "owner", Private: true, PasswordHash: "h", MaxMembers: 10}))
		f.ok(EncodeInvite(Invite{Room: "pw", User: "owner", Target: "dave"}))
		f.join("pw", "dave")
		_, err := f.apply(EncodeJoin(Join{Room: "pw", User: "eve"}))
		wantCode(t, err, errs.Forbidden)
	})
	t.Run("withdrawn", func(t *testing.T) {
		f.ok(EncodeInvite(Invite{Room: "club", User: "owner", Target: "eve"}))
		f.ok(EncodeInvite(Invite{Room: "club", User: "owner", Target: "eve", Undo: true}))
		_, err := f.apply(EncodeJoin(Join{Room: "club", User: "eve"}))
		wantCode(t, err, errs.Forbidden)
	})
	t.Run("a banned user is not invited, and a ban voids an invitation", func(t *testing.T) {
		f.ok(EncodeInvite(Invite{Room: "club", User: "owner", Target: "mallory"}))
		f.ok(EncodeModerate(Moderate{Room: "club", User: "owner", Target: "mallory", Action: ActBan}))
		_, err := f.apply(EncodeInvite(Invite{Room: "club", User: "owner", Target: "mallory"}))
		wantCode(t, err, errs.Conflict)
		f.ok(EncodeModerate(Moderate{Room: "club", User: "owner", Target: "mallory", Action: ActUnban}))
		_, err = f.apply(EncodeJoin(Join{Room: "club", User: "mallory"}))
		wantCode(t, err, errs.Forbidden)
	})
	t.Run("public rooms need no invitation", func(t *testing.T) {
		f.create("open", "owner")
		_, err := f.apply(EncodeInvite(Invite{Room: "open", User: "owner", Target: "bob"}))
		wantCode(t, err, errs.Invalid)
	})
	t.Run("an invitation-only room has no password", func(t *testing.T) {
		_, err := f.apply(EncodeCreateRoom(CreateRoom{Room: "bad", Owner: "o", Private: true, InviteOnly: true, PasswordHash: "h", MaxMembers: 3}))
		wantCode(t, err, errs.Invalid)
	})
}

func TestModeration_Announcement(t *testing.T) {
	f := modFixture(t)
	_, err := f.apply(EncodeSettings(Settings{Room: "r", User: "mod", Set: SetAnnouncement, Announcement: true}))
	wantCode(t, err, errs.Forbidden) // the owner's setting
	f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetAnnouncement, Announcement: true}))
	if !f.room("r").Announcement {
		t.Fatal("not an announcement room")
	}
	_, err = f.apply(EncodePost(Post{Room: "r", User: "bob", Text: "can I?"}))
	wantCode(t, err, errs.Forbidden)
	f.post("r", "mod", "news")
	f.post("r", "owner", "more news")
	f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetAnnouncement}))
	f.post("r", "bob", "now I can")
}

func TestModeration_SlowMode(t *testing.T) {
	f := modFixture(t)
	f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetSlowMode, SlowModeSec: 30}))
	start := f.now
	f.post("r", "bob", "one")
	f.now = start + 29999
	_, err := f.apply(EncodePost(Post{Room: "r", User: "bob", Text: "two"}))
	wantCode(t, err, errs.RateLimited)
	var wait SlowModeWait
	if !errors.As(err, &wait) || wait.RetryAfter() != time.Second {
		t.Errorf("slow mode refusal with 1 ms left: wait %v (%v), want 1s", time.Duration(wait), err)
	}
	f.now = start + 1000
	_, err = f.apply(EncodePost(Post{Room: "r", User: "bob", Text: "two"}))
	if !errors.As(err, &wait) || wait.RetryAfter() != 29*time.Second {
		t.Errorf("slow mode refusal with 29 s left: wait %v (%v), want 29s", time.Duration(wait), err)
	}
	f.post("r", "carol", "others still post")
	f.post("r", "mod", "moderators are exempt")
	f.post("r", "mod", "twice")
	f.now = start + 30000
	f.post("r", "bob", "two")
	f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetSlowMode}))
	f.post("r", "bob", "three")
}

func TestModeration_Settings(t *testing.T) {
	f := modFixture(t)
	res := f.ok(EncodeSettings(Settings{Room: "r", User: "mod", Set: SetTopic | SetDescription, Topic: "Go", Description: "all about Go"}))
	if res.Room == nil || res.Room.Topic != "Go" || res.Room.Description != "all about Go" {
		t.Fatalf("result room = %+v", res.Room)
	}
	ev := f.lastEvent("r")
	if ev.Kind != KindSettings || ev.Sender != "mod" || !slices.Equal(ev.Changed, []string{"topic", "description"}) {
		t.Fatalf("settings event = %+v", ev)
	}
	_, err := f.apply(EncodeSettings(Settings{Room: "r", User: "bob", Set: SetTopic, Topic: "mine"}))
	wantCode(t, err, errs.Forbidden)
	t.Run("max_members", func(t *testing.T) {
		_, err := f.apply(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetMaxMembers, MaxMembers: 3}))
		wantCode(t, err, errs.Conflict) // 4 members
		f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetMaxMembers, MaxMembers: 4}))
		_, err = f.apply(EncodeJoin(Join{Room: "r", User: "dave"}))
		wantCode(t, err, errs.Conflict)
		f.ok(EncodeSettings(Settings{Room: "r", User: "root", Admin: true, Set: SetMaxMembers, MaxMembers: 5}))
		f.join("r", "dave")
	})
	t.Run("access", func(t *testing.T) {
		f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetAccess, Access: AccessInvite}))
		if rm := f.room("r"); !rm.Private || !rm.InviteOnly {
			t.Fatalf("room = %+v", rm)
		}
		_, err := f.apply(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetAccess, Access: AccessPassword}))
		wantCode(t, err, errs.Invalid)
		f.ok(EncodeSettings(Settings{Room: "r", User: "owner", Set: SetAccess, Access: AccessPassword, PasswordHash: "h"}))
		if rm := f.room("r"); !rm.Private || rm.InviteOnly {
			t.Fatalf("room = %+v", rm)
		}
	})
	t.Run("deleting the room forgets its settings and sanctions", func(t *testing.T) {
		f.ok(EncodeModerate(Moderate{Room: "r", User: "owner", Target: "eve", Action: ActBan}))
		f.ok(EncodeDeleteRoom(DeleteRoom{Room: "r", User: "owner"}))
		f.create("r", "eve")
		if rm := f.room("r"); rm.Topic != "" || rm.Private {
			t.Fatalf("the new room inherited %+v", rm)
		}
	})
}

func TestModeration_Log(t *testing.T) {
	f := modFixture(t)
	f.ok(EncodeModerate(Moderate{Room: "r", User: "mod", Target: "bob", Action: ActMute, DurationMs: 5000, Reason: "r1"}))
	f.ok(EncodeModerate(Moderate{Room: "r", User: "owner", Target: "carol", Action: ActBan, Reason: "r2"}))
	f.post("r", "mod", "not moderation")
	_, err := Moderation(f.w, "r", "bob", false, f.now)
	wantCode(t, err, errs.Forbidden)
	log, err := Moderation(f.w, "r", "mod", false, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Bans) != 1 || log.Bans[0].User != "carol" || log.Bans[0].By != "owner" || log.Bans[0].Reason != "r2" {
		t.Fatalf("bans = %+v", log.Bans)
	}
	if len(log.Mutes) != 1 || log.Mutes[0].User != "bob" {
		t.Fatalf("mutes = %+v", log.Mutes)
	}
	var kinds []string
	for _, e := range log.Events {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, []string{KindRole, KindMute, KindBan}) {
		t.Fatalf("log kinds = %v", kinds)
	}
	// An ended mute is no longer listed.
	log, err = Moderation(f.w, "r", "root", true, f.now+10000)
	if err != nil || len(log.Mutes) != 0 {
		t.Fatalf("mutes after the end = %+v, %v", log.Mutes, err)
	}
	// Retention removes the log entries with their events.
	f.now += 1 << 30
	f.ok(EncodeCompact(Compact{RetentionMs: 1}))
	if n := len(scanKeys(t, f, sanctionPrefix("r", logPrefix))); n != 0 {
		t.Fatalf("%d moderation log keys after compaction", n)
	}
}

func scanKeys(t *testing.T, f *fixture, prefix []byte) [][]byte {
	t.Helper()
	var keys [][]byte
	hi := append(slices.Clone(prefix), 0xff)
	if err := f.w.Scan(prefix, hi, func(k, _ []byte) bool {
		keys = append(keys, slices.Clone(k))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// A room that uses none of the new features is stored exactly as the
// previous build stored it, so Post, Join and friends stay identical
// across a rolling upgrade.
func TestModeration_OldRecordsUnchanged(t *testing.T) {
	rec := &roomRecord{owner: "a", maxMembers: 3, members: 1, firstRetained: 1}
	enc := encodeRoom(rec)
	if enc[1]&recSettings != 0 {
		t.Fatalf("a room without settings is stored with them: % x", enc)
	}
	m := memberRecord{name: "bob", joinedAt: 5, lastRead: 2}
	if got, want := encodeMember(m), []byte{recordVersion, 10, 2, 3, 'b', 'o', 'b'}; !slices.Equal(got, want) {
		t.Fatalf("member record = % x, want % x", got, want)
	}
	mod := memberRecord{name: "bob", role: roleModerator, lastPost: 9}
	back, err := decodeMember([]byte("k"), encodeMember(mod))
	if err != nil || back != mod {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

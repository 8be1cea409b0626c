package chat

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// encode encodes any command.
func encode(t testing.TB, c Command) []byte {
	switch c := c.(type) {
	case CreateRoom:
		return EncodeCreateRoom(c)
	case DeleteRoom:
		return EncodeDeleteRoom(c)
	case Join:
		return EncodeJoin(c)
	case Leave:
		return EncodeLeave(c)
	case MarkRead:
		return EncodeMarkRead(c)
	case Post:
		return EncodePost(c)
	case Compact:
		return EncodeCompact(c)
	case Edit:
		return EncodeEdit(c)
	case Remove:
		return EncodeRemove(c)
	case React:
		return EncodeReact(c)
	case Pin:
		return EncodePin(c)
	case Notify:
		return EncodeNotify(c)
	case SetRole:
		return EncodeSetRole(c)
	case Invite:
		return EncodeInvite(c)
	case Moderate:
		return EncodeModerate(c)
	case Settings:
		return EncodeSettings(c)
	case CreateHook: // hooks.go
		return EncodeCreateHook(c)
	case RevokeHook:
		return EncodeRevokeHook(c)
	case HookPost:
		return EncodeHookPost(c)
	case LegalHold: // hold.go
		return EncodeLegalHold(c)
	case CreateOutHook: // outhooks.go
		return EncodeCreateOutHook(c)
	case DeleteOutHook:
		return EncodeDeleteOutHook(c)
	case Delivered:
		return EncodeDelivered(c)
	case FileChunk: // command_file.go
		return EncodeFileChunk(c)
	case FileCommit:
		return EncodeFileCommit(c)
	case FileAbort:
		return EncodeFileAbort(c)
	}
	t.Fatalf("unexpected command %T", c)
	return nil
}

func TestEncode_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"create public", CreateRoom{Room: "general", Owner: "alice", MaxMembers: 30}},
		{"create private", CreateRoom{Room: "r", Owner: "a", Private: true, PasswordHash: "$argon2id$x", MaxMembers: 1 << 20}},
		{"delete", DeleteRoom{Room: "r", User: "bob"}},
		{"delete admin", DeleteRoom{Room: "r", User: "root", Admin: true}},
		{"join", Join{Room: "r", User: "bob"}},
		{"join with hash", Join{Room: "r", User: "bob", PasswordHash: "h"}},
		{"leave", Leave{Room: "r", User: "bob"}},
		{"mark read", MarkRead{Room: "r", User: "bob", Seq: 1 << 40}},
		{"mark read zero", MarkRead{Room: "r", User: "bob"}},
		{"post", Post{Room: "r", User: "bob", Text: "hello"}},
		{"post empty text", Post{Room: "r", User: "bob", Text: ""}},
		{"whisper", Post{Room: "r", User: "bob", To: []string{"alice", "carol"}, Text: "psst\x00\xff"}},
		{"compact", Compact{RetentionMs: 86400000, Budget: 100}},
		{"compact zero", Compact{}},
		{"retention", Settings{Room: "r", User: "a", Set: SetRetentionDays | SetRetentionMessages, RetentionDays: -1, RetentionMessages: 1 << 40}},
		{"retention days", Settings{Room: "r", User: "a", Admin: true, Set: SetTopic | SetRetentionDays, Topic: "t", RetentionDays: 30}},
		{"legal hold", LegalHold{Room: "r", User: "root", Admin: true}},
		{"legal hold lift", LegalHold{Room: "r", User: "root", Admin: true, Lift: true}},
		{"create invite-only", CreateRoom{Room: "r", Owner: "a", Private: true, InviteOnly: true, MaxMembers: 5}},
		{"set role", SetRole{Room: "r", User: "a", Target: "b", Role: RoleModerator}},
		{"transfer", SetRole{Room: "r", User: "root", Target: "b", Role: RoleOwner, Admin: true}},
		{"invite", Invite{Room: "r", User: "a", Target: "b"}},
		{"uninvite", Invite{Room: "r", User: "a", Target: "b", Undo: true, Admin: true}},
		{"kick", Moderate{Room: "r", User: "a", Target: "b", Action: ActKick, Reason: "spam"}},
		{"ban", Moderate{Room: "r", User: "a", Target: "b", Action: ActBan, DurationMs: 3600000}},
		{"mute", Moderate{Room: "r", User: "a", Target: "b", Action: ActMute, DurationMs: 1, Admin: true}},
		{"settings none", Settings{Room: "r", User: "a"}},
		{"settings all", Settings{Room: "r", User: "a", Admin: true, Set: setAll, Topic: "t", Description: "d",
			Announcement: true, SlowModeSec: 30, MaxMembers: 7, Access: AccessPassword, PasswordHash: "h"}},
		{"settings topic", Settings{Room: "r", User: "a", Set: SetTopic}},
		{"reply", Post{Room: "r", User: "bob", Text: "yes", ReplyTo: 7}},
		{"mentions", Post{Room: "r", User: "bob", Text: "@a @here @room", Mentions: []string{"a"}, Here: []string{"c"}, MentionRoom: true, MentionHere: true}},
		{"whisper reply", Post{Room: "r", User: "bob", To: []string{"a"}, Text: "x", ReplyTo: 1}},
		{"edit", Edit{Room: "r", User: "bob", Seq: 3, Text: "fixed"}},
		{"edit windowed", Edit{Room: "r", User: "bob", Seq: 3, Windowed: true, WindowMs: 60000, Text: "fixed"}},
		{"remove", Remove{Room: "r", User: "bob", Seq: 3}},
		{"remove admin", Remove{Room: "r", User: "root", Seq: 3, Admin: true}},
		{"react", React{Room: "r", User: "bob", Seq: 3, Emoji: "👍"}},
		{"unreact", React{Room: "r", User: "bob", Seq: 3, Emoji: ":tada:", Undo: true}},
		{"pin", Pin{Room: "r", User: "bob", Seq: 3}},
		{"unpin", Pin{Room: "r", User: "bob", Seq: 3, Undo: true}},
		{"notify", Notify{Room: "r", Sender: "bob", Seq: 3, User: "alice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := encode(t, tc.cmd)
			if enc[0] != Tag {
				t.Fatalf("first byte = %q, want %q", enc[0], Tag)
			}
			got, err := DecodeCommand(enc)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !reflect.DeepEqual(got, tc.cmd) {
				t.Fatalf("round trip = %#v, want %#v", got, tc.cmd)
			}
		})
	}
}

func TestDecodeCommand_Errors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'K', opLeave, 1, 'r', 1, 'u'}},
		{"unknown op", []byte{Tag, 'Z', 1, 'r', 1, 'u'}},
		{"empty room", []byte{Tag, opLeave, 0, 1, 'u'}},
		{"empty user", []byte{Tag, opLeave, 1, 'r', 0}},
		{"missing user", []byte{Tag, opLeave, 1, 'r'}},
		{"room too long", []byte{Tag, opLeave, 5, 'r'}},
		{"huge length", []byte{Tag, opLeave, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"truncated varint", []byte{Tag, opLeave, 0x80}},
		{"non-minimal varint", []byte{Tag, opLeave, 0x81, 0x00, 'r', 1, 'u'}},
		{"leave trailing", []byte{Tag, opLeave, 1, 'r', 1, 'u', 'x'}},
		{"unknown create flag", []byte{Tag, opCreate, 0x80, 1, 'r', 1, 'u', 1, 0}},
		{"unknown delete flag", []byte{Tag, opDelete, 0x02, 1, 'r', 1, 'u'}},
		{"create missing hash", []byte{Tag, opCreate, 0, 1, 'r', 1, 'u', 1}},
		{"mark read missing seq", []byte{Tag, opMarkRead, 1, 'r', 1, 'u'}},
		{"post too many recipients", []byte{Tag, opPost, 1, 'r', 1, 'u', 5, 1, 'a'}},
		{"post empty recipient", []byte{Tag, opPost, 1, 'r', 1, 'u', 1, 0, 'x'}},
		{"compact trailing", []byte{Tag, opCompact, 0, 0, 0}},
		{"compact truncated", []byte{Tag, opCompact, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.in); err == nil {
				t.Fatalf("DecodeCommand(% x) = %#v, want error", tc.in, c)
			}
		})
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(EncodeCreateRoom(CreateRoom{Room: "r", Owner: "a", Private: true, PasswordHash: "h", MaxMembers: 30}))
	f.Add(EncodeDeleteRoom(DeleteRoom{Room: "r", User: "a", Admin: true}))
	f.Add(EncodeJoin(Join{Room: "r", User: "b", PasswordHash: "h"}))
	f.Add(EncodeLeave(Leave{Room: "r", User: "b"}))
	f.Add(EncodeMarkRead(MarkRead{Room: "r", User: "b", Seq: 300}))
	f.Add(EncodePost(Post{Room: "r", User: "b", To: []string{"a", "c"}, Text: "hi"}))
	f.Add(EncodeCompact(Compact{RetentionMs: 1000, Budget: 3}))
	f.Add([]byte{Tag, opPost, 0xff})
	f.Add(EncodeSetRole(SetRole{Room: "r", User: "a", Target: "b", Role: RoleOwner}))
	f.Add(EncodeInvite(Invite{Room: "r", User: "a", Target: "b", Undo: true}))
	f.Add(EncodeModerate(Moderate{Room: "r", User: "a", Target: "b", Action: ActBan, DurationMs: 5, Reason: "x"}))
	f.Add(EncodeSettings(Settings{Room: "r", User: "a", Set: setAll, Topic: "t", Access: AccessInvite}))
	f.Add(EncodeSettings(Settings{Room: "r", User: "a", Set: SetRetentionDays | SetRetentionMessages, RetentionDays: -1, RetentionMessages: 9}))
	f.Add(EncodeLegalHold(LegalHold{Room: "r", User: "a", Admin: true, Lift: true}))
	f.Add(EncodeCreateOutHook(CreateOutHook{Room: "r", User: "a", ID: "0123456789abcdef", Name: "n", URL: "https://x/", Secret: "s", Triggers: []string{"go"}}))
	f.Add(EncodeDeleteOutHook(DeleteOutHook{Room: "r", User: "a", Admin: true, ID: "0123456789abcdef"}))
	f.Add(EncodeDelivered(Delivered{Room: "r", ID: "0123456789abcdef", Seq: 3, Due: 9, Attempt: 2, Status: 500, Error: "e", Drop: true}))
	f.Add(EncodeFileChunk(FileChunk{Room: "r", User: "a", ID: "0123456789abcdef", Index: 2, Quota: 1 << 30, Data: []byte("bytes")}))
	f.Add(EncodeFileCommit(FileCommit{Room: "r", User: "a", ID: "0123456789abcdef", Size: 9, Chunks: 1, Name: "a.png", ContentType: "image/png"}))
	f.Add(EncodeFileAbort(FileAbort{Room: "r", User: "a", ID: "0123456789abcdef"}))
	f.Add(EncodePost(Post{Room: "r", User: "a", Text: "see", Files: []string{"0123456789abcdef"}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		if enc := encode(t, c); !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding % x gives % x", in, enc)
		}
	})
}

func BenchmarkDecodeCommand(b *testing.B) {
	cmd := EncodePost(Post{Room: "general", User: "alice", Text: strings.Repeat("x", 200)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

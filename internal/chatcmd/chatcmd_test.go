package chatcmd_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/chatcmd"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// both applies chat and KV commands, as a partition of a node does.
type both struct{}

func (both) Apply(w state.Writer, m state.Meta, cmd []byte) ([]byte, error) {
	if len(cmd) > 0 && cmd[0] == chat.Tag {
		return chat.StateMachine{}.Apply(w, m, cmd)
	}
	return kv.StateMachine{}.Apply(w, m, cmd)
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text string
		want chatcmd.Command
		ok   bool
	}{
		{"/put color blue sky", chatcmd.Command{Op: "put", Key: "color", Value: "blue sky"}, true},
		{"/PUT k v", chatcmd.Command{Op: "put", Key: "k", Value: "v"}, true},
		{"/put k ", chatcmd.Command{Op: "put", Key: "k", Value: ""}, true},
		{"/get color", chatcmd.Command{Op: "get", Key: "color"}, true},
		{"/del  color ", chatcmd.Command{Op: "del", Key: "color"}, true},
		{"/put k", chatcmd.Command{}, false},
		{"/get", chatcmd.Command{}, false},
		{"/get a b", chatcmd.Command{}, false},
		{"/shrug", chatcmd.Command{}, false},
		{"hello /get k", chatcmd.Command{}, false},
	} {
		got, ok := chatcmd.Parse(tc.text)
		if ok != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPoster_Post(t *testing.T) {
	ctx := context.Background()
	r := statetest.NewReplicator(4, both{})
	rooms := chat.NewService(r, chat.Config{MaxText: 80, Hasher: passwordtest.Hasher()})
	store := kv.NewService(r, kv.Limits{})
	p := chatcmd.NewPoster(rooms, store, 80)
	if _, err := rooms.Create(ctx, "alice", chat.CreateRequest{Name: "lobby"}, ""); err != nil {
		t.Fatal(err)
	}
	post := func(user, text, key string) (string, error) {
		t.Helper()
		res, err := p.Post(ctx, user, "lobby", text, nil, key)
		if err != nil {
			return "", err
		}
		evs, _, err := rooms.History(ctx, "alice", "lobby", chat.HistoryQuery{After: res.Seq - 1, Limit: 1}, false)
		if err != nil || len(evs) != 1 {
			t.Fatalf("history at %d: %v %v", res.Seq, evs, err)
		}
		return evs[0].Text, nil
	}

	if got, _ := post("alice", "/put color blue", "k1"); got != "/put color blue → stored color (version 1)" {
		t.Errorf("put posted %q", got)
	}
	if item, _, err := store.Get(ctx, "color", false); err != nil || string(item.Value) != "blue" {
		t.Errorf("KV after /put: %+v %v", item, err)
	}
	// A retry with the same key writes once and posts once.
	seqBefore := lastSeq(t, rooms)
	if got, _ := post("alice", "/put color blue", "k1"); !strings.HasSuffix(got, "(version 1)") {
		t.Errorf("retried put posted %q", got)
	}
	if item, _, _ := store.Get(ctx, "color", false); item.Version != 1 || lastSeq(t, rooms) != seqBefore {
		t.Errorf("retry repeated an effect: version %d, last seq %d (was %d)", item.Version, lastSeq(t, rooms), seqBefore)
	}
	if got, _ := post("alice", "/get color", ""); got != "/get color → color = blue (version 1)" {
		t.Errorf("get posted %q", got)
	}
	if got, _ := post("alice", "/del color", ""); got != "/del color → deleted color" {
		t.Errorf("del posted %q", got)
	}
	if got, _ := post("alice", "/get color", ""); got != "/get color → not found" {
		t.Errorf("get after del posted %q", got)
	}
	if got, _ := post("alice", "just text", ""); got != "just text" {
		t.Errorf("plain text posted as %q", got)
	}
	// A long result is clipped to the text limit.
	if got, _ := post("alice", "/put long "+strings.Repeat("x", 60), ""); len(got) > 80 {
		t.Errorf("posted %d bytes, over the limit", len(got))
	}

	// A value holding escape sequences is shown escaped: the post passes the
	// text rule, and members' terminals are safe.
	if _, err := store.Put(ctx, "alice", "trap", []byte("\x1b[2Jgone\nnext"), 0, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := post("alice", "/get trap", ""); err != nil || got != "/get trap → trap = \\x1b[2Jgone\nnext (version 1)" {
		t.Errorf("get of a hostile value posted %q, %v", got, err)
	}
	// A command whose own text breaks the rule runs nothing.
	if _, err := post("alice", "/put trap \x1b]0;title\x07", ""); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "U+001B") {
		t.Errorf("command with an escape: %v, want invalid naming U+001B", err)
	}
	if item, _, _ := store.Get(ctx, "trap", false); item.Version != 1 {
		t.Errorf("the refused /put reached the store: version %d", item.Version)
	}

	// A non-member's command changes nothing.
	before := lastSeq(t, rooms)
	if _, err := post("mallory", "/put color red", ""); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("non-member command: %v, want forbidden", err)
	}
	if _, _, err := store.Get(ctx, "color", false); !errs.Is(err, errs.NotFound) {
		t.Errorf("non-member's /put reached the store: %v", err)
	}
	if lastSeq(t, rooms) != before {
		t.Errorf("non-member's command posted")
	}
}

func lastSeq(t *testing.T, rooms *chat.Service) uint64 {
	t.Helper()
	room, _, err := rooms.Room(context.Background(), "alice", "lobby", false)
	if err != nil {
		t.Fatal(err)
	}
	return room.LastSeq
}

// FuzzParse checks that any text parses without panicking and that a
// recognised command has a key without spaces and a known op.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/put k v", "/get k", "/del k", "/put", "/", "hello", "/PUT  a  b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, ok := chatcmd.Parse(text)
		if !ok {
			return
		}
		if c.Key == "" || strings.Contains(c.Key, " ") {
			t.Fatalf("Parse(%q) gave key %q", text, c.Key)
		}
		if c.Op != "put" && c.Op != "get" && c.Op != "del" {
			t.Fatalf("Parse(%q) gave op %q", text, c.Op)
		}
	})
}

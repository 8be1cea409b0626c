package testcluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/chat"
)

// Incoming webhooks and exports on a cluster where some nodes hold no
// replica of the room: a hook made through one node posts through another
// (one without a replica, so the post is forwarded) and the bot's message is
// read on a third; a hook revoked through one node is refused on every
// other at once; the export from any node has every event once, in order.
func TestAPI_HooksAndExport(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 4, 3)
	waitProtocol(t, c, chat.HookProtocol)
	ctx := apiCtx(t)
	bob := signUp(t, c, 0, 0, "bob")
	if _, err := bob.CreateRoom(ctx, client.RoomSpec{Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	far := noReplica(c, "ops")
	if far < 0 {
		t.Fatal("every node holds a replica of ops")
	}
	near := (far + 1) % c.Len()
	h, err := as(c, near, bob).CreateHook(ctx, "ops", "CI")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Len(); i++ {
		if _, err := anonAt(c, i).PostHook(ctx, h.Key, h.Secret, fmt.Sprintf("via n%d", i+1), ""); err != nil {
			t.Fatalf("post through the hook via n%d: %v", i+1, err)
		}
	}
	events, err := as(c, (far+2)%c.Len(), bob).History(ctx, "ops", client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1+c.Len() {
		t.Fatalf("history %s", fmtSeqs(events))
	}
	for i, ev := range events[1:] {
		if ev.Sender != "hook:CI" || ev.Text != fmt.Sprintf("via n%d", i+1) {
			t.Fatalf("event %d: %+v", ev.Seq, ev)
		}
	}

	t.Run("export from every node", func(t *testing.T) {
		for i := 0; i < c.Len(); i++ {
			var buf bytes.Buffer
			n, err := as(c, i, bob).ExportRoom(ctx, "ops", &buf)
			if err != nil || n != len(events) {
				t.Fatalf("export via n%d: %d lines, %v", i+1, n, err)
			}
			for j, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				var ev client.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq != uint64(j+1) {
					t.Fatalf("export via n%d, line %d: %q %v", i+1, j+1, line, err)
				}
			}
		}
	})

	t.Run("revoked through one node: refused on every node", func(t *testing.T) {
		if err := as(c, far, bob).RevokeHook(ctx, "ops", h.ID); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < c.Len(); i++ {
			_, err := anonAt(c, i).PostHook(ctx, h.Key, h.Secret, "after revoke", "")
			mustStatus(t, err, http.StatusNotFound, "not_found")
		}
	})
}

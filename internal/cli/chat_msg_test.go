package cli

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// The chat shows edits, deletes, reactions, replies, pins and mentions as
// they happen, and its commands make them.
func TestChat_MessageCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	aliceTok := signUpAs(t, url, "alice")
	bob := client.New(url, client.WithToken(signUpAs(t, url, "bob")))
	chat := startChat(t, "lab", "--server", url, "--token", aliceTok, "--create")
	chat.waitOut(`-- joined lab on `)
	if _, err := bob.JoinRoom(ctx, "lab", ""); err != nil {
		t.Fatal(err)
	}
	chat.typeLine("first draft")
	chat.waitOut(`#3\] alice: first draft\n`)
	chat.typeLine("/edit 3 final draft")
	chat.waitOut(`#4\] \* alice edited #3: final draft\n`)
	if _, err := bob.React(ctx, "lab", 3, "👍"); err != nil {
		t.Fatal(err)
	}
	chat.waitOut(`#5\] \* bob reacted 👍 to #3\n`)
	chat.typeLine("/react 3 :tada:")
	chat.waitOut(`#6\] \* alice reacted :tada: to #3\n`)
	chat.typeLine("/reply 3 a reply")
	chat.waitOut(`#7\] alice: a reply \[reply to #3\]\n`)
	chat.typeLine("/thread 3")
	chat.waitOut(`-- thread of #3 \(1 reply\):\n--   #3 \[[\d:]+\] alice: final draft \(edited\) \[1 reply\] \[👍 1\] \[:tada: 1\]\n--   #7 `)
	chat.typeLine("/pin 3")
	chat.waitOut(`#8\] \* alice pinned #3\n`)
	chat.typeLine("/pins")
	chat.waitOut(`-- pinned #3 `)
	if _, err := bob.Post(ctx, "lab", "ping @alice", client.PostOptions{}); err != nil {
		t.Fatal(err)
	}
	chat.waitOut(`-- bob mentioned you in lab \(#9\)\n`)
	chat.typeLine("/delete 3")
	chat.waitOut(`\] \* alice deleted #3\n`)
	chat.typeLine("/edit x nothing")
	chat.waitOut(`-- error: usage: /edit N TEXT\n`)
	chat.typeLine("/delete 9")
	chat.waitOut(`\] \* alice deleted #9\n`) // the owner deletes bob's message
	if code := chat.quit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

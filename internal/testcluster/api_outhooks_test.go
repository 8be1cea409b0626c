package testcluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
	"github.com/parley-chat/parley/internal/webhook"
)

// receiver is a webhook receiver on loopback that checks every delivery's
// signature, fails the first attempt at some messages, holds the first
// attempt at one until its sender gives up (so a node can die while
// delivering it), and keeps what it accepted by delivery id.
type receiver struct {
	mu       sync.Mutex
	secret   string
	accepted map[string]chat.Payload // by delivery id
	attempts map[string]int
	badSigs  int
	failSeq  func(seq uint64) bool // fail the first attempt at these
	holdSeq  uint64                // hold the first attempt at this one
	held     chan struct{}         // closed once that attempt arrived
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p chat.Payload
	rv.mu.Lock()
	secret := rv.secret
	sigErr := webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute)
	if sigErr != nil || json.Unmarshal(body, &p) != nil || p.ID != r.Header.Get(webhook.HeaderDelivery) {
		rv.badSigs++
		rv.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rv.attempts[p.ID]++
	first := rv.attempts[p.ID] == 1
	rv.mu.Unlock()
	if first && p.Seq == rv.holdSeq {
		close(rv.held)
		<-r.Context().Done() // the sender died: it never learns of an answer
		return
	}
	if first && rv.failSeq(p.Seq) {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	rv.mu.Lock()
	rv.accepted[p.ID] = p
	rv.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// TestAPI_OutgoingHooks: a room's outgoing hook with a trigger word POSTs
// each matching message, signed, to a receiver on loopback (allowed by the
// cluster's --webhook-allow-cidr); first attempts that fail are retried;
// the leader delivering the room's outbox is killed while a delivery is in
// flight and the new leader delivers it. Every matching message arrives
// under its id, no other does, every signature verifies, and hooks to
// private addresses outside the allowance, or to the cluster itself, are
// refused.
func TestAPI_OutgoingHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, ReplicationFactor: 3, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.WebhookAllowCIDRs = []string{"127.0.0.0/8"}
		},
	})
	waitProtocol(t, c, chat.HookProtocol)
	ctx := apiCtx(t)
	const matching = 12
	rv := &receiver{accepted: map[string]chat.Payload{}, attempts: map[string]int{},
		failSeq: func(seq uint64) bool { return seq%3 == 0 }, holdSeq: 4, held: make(chan struct{})}
	srv := httptest.NewServer(rv)
	t.Cleanup(srv.Close)

	bob := signUp(t, c, 0, 0, "bob")
	if _, err := bob.CreateRoom(ctx, client.RoomSpec{Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	h, err := bob.CreateOutgoingHook(ctx, "ops", client.OutgoingHookSpec{Name: "ci", URL: srv.URL + "/hook", TriggerWords: []string{"deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	rv.mu.Lock()
	rv.secret = h.Secret
	rv.mu.Unlock()

	t.Run("private addresses and the cluster itself are refused", func(t *testing.T) {
		for _, u := range []string{"http://10.0.0.1/x", "http://192.168.1.1/x", "http://[fc00::1]/x", "http://169.254.169.254/latest", "http://" + c.Node(1).HTTPAddr() + "/api/v1/rooms"} {
			_, err := bob.CreateOutgoingHook(ctx, "ops", client.OutgoingHookSpec{Name: "evil", URL: u})
			mustStatus(t, err, http.StatusForbidden, "forbidden")
		}
		_, err := bob.CreateOutgoingHook(ctx, "ops", client.OutgoingHookSpec{Name: "evil", URL: "ftp://example.com/x"})
		mustStatus(t, err, http.StatusBadRequest, "invalid")
	})

	// Seqs: 1 is bob's join; then a matching and a non-matching message
	// alternate, so matching message k (0-based) has seq 2+2k.
	p := c.Node(0).Router().PartitionOf("ops")
	leader := c.LeaderOf(p)
	post := func(via, k int) {
		t.Helper()
		cl := as(c, via, bob)
		if _, err := cl.Post(ctx, "ops", fmt.Sprintf("Deploy build %d", k), client.PostOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Post(ctx, "ops", fmt.Sprintf("chatter %d about deploy", k), client.PostOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < matching/2; k++ {
		post(leader, k)
	}
	select {
	case <-rv.held: // the leader is delivering the message held at the receiver
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery of the message to hold")
	}
	if l := c.LeaderOf(p); l >= 0 {
		leader = l
	}
	c.Kill(leader)
	other := (leader + 1) % c.Len()
	for k := matching / 2; k < matching; k++ {
		post(other, k)
	}

	poll.Until(t, 20*time.Second, "every matching message delivered", func() error {
		rv.mu.Lock()
		defer rv.mu.Unlock()
		if len(rv.accepted) < matching {
			return fmt.Errorf("%d of %d accepted", len(rv.accepted), matching)
		}
		return nil
	})
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.badSigs != 0 {
		t.Fatalf("%d deliveries with a bad signature", rv.badSigs)
	}
	if len(rv.accepted) != matching {
		t.Fatalf("accepted %d deliveries, want %d: %v", len(rv.accepted), matching, rv.accepted)
	}
	for k := 0; k < matching; k++ {
		seq := uint64(2 + 2*k)
		id := chat.DeliveryID(h.ID, seq)
		p, ok := rv.accepted[id]
		if !ok || p.Seq != seq || p.Text != fmt.Sprintf("Deploy build %d", k) || p.Room != "ops" || p.Sender != "bob" || p.Hook != h.ID {
			t.Fatalf("delivery %s: %+v (accepted: %v)", id, p, ok)
		}
		if p.Seq%3 == 0 && rv.attempts[id] < 2 {
			t.Errorf("delivery %s was accepted at its first attempt, which the receiver fails", id)
		}
	}
	if rv.attempts[chat.DeliveryID(h.ID, rv.holdSeq)] < 2 {
		t.Errorf("the delivery in flight when its leader died was not attempted again")
	}
	for id, p := range rv.accepted {
		if !strings.HasPrefix(p.Text, "Deploy") {
			t.Errorf("delivery %s of a message without the trigger word: %q", id, p.Text)
		}
	}

	// The sender records an outcome once the receiver has answered: the
	// log catches up with what the receiver accepted.
	poll.Until(t, 10*time.Second, "the delivery log shows every message delivered", func() error {
		log, err := as(c, other, bob).OutgoingHookDeliveries(ctx, "ops", h.ID)
		if err != nil {
			return err
		}
		delivered := map[uint64]bool{}
		for _, d := range log {
			if d.Outcome == chat.OutcomeDelivered {
				delivered[d.Seq] = true
			}
		}
		if len(delivered) != matching {
			return fmt.Errorf("the delivery log shows %d messages delivered, want %d: %+v", len(delivered), matching, log)
		}
		return nil
	})
}

package chat_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

func TestMatchesTriggers(t *testing.T) {
	for _, tc := range []struct {
		text     string
		triggers []string
		want     bool
	}{
		{"anything at all", nil, true},
		{"deploy now", []string{"deploy"}, true},
		{"  DePloy\tnow", []string{"deploy"}, true},
		{"deploy", []string{"build", "deploy"}, true},
		{"deployment now", []string{"deploy"}, false},
		{"please deploy", []string{"deploy"}, false},
		{"", []string{"deploy"}, false},
		{"!ping me", []string{"!ping"}, true},
		{"ÉTÉ x", []string{"été"}, false}, // ASCII case only: the same on every build
	} {
		if got := chat.MatchesTriggers(tc.text, tc.triggers); got != tc.want {
			t.Errorf("MatchesTriggers(%q, %q) = %v, want %v", tc.text, tc.triggers, got, tc.want)
		}
	}
}

func TestDeliveryBackoffMs(t *testing.T) {
	want := map[uint64]int64{0: 0, 1: 500, 2: 1000, 3: 2000, 11: 512000, 12: 600000, 63: 600000, 1 << 40: 600000}
	for n, ms := range want {
		if got := chat.DeliveryBackoffMs(n); got != ms {
			t.Errorf("DeliveryBackoffMs(%d) = %d, want %d", n, got, ms)
		}
	}
}

func TestCommand_OutHookRoundTrip(t *testing.T) {
	for _, c := range []chat.Command{
		chat.CreateOutHook{Room: "ops", User: "bob", Admin: true, ID: "0123456789abcdef", Name: "ci", URL: "https://x.example/h", Secret: "s", Triggers: []string{"deploy", "ship"}},
		chat.DeleteOutHook{Room: "ops", User: "bob", ID: "0123456789abcdef"},
		chat.Delivered{Room: "ops", ID: "0123456789abcdef", Seq: 7, Due: 1_700_000_000_000, Attempt: 2, Status: 503, Error: "busy", OK: false},
		chat.Delivered{Room: "ops", ID: "0123456789abcdef", Seq: 7, Due: 5, Attempt: 1, OK: true},
	} {
		var b []byte
		switch c := c.(type) {
		case chat.CreateOutHook:
			b = chat.EncodeCreateOutHook(c)
		case chat.DeleteOutHook:
			b = chat.EncodeDeleteOutHook(c)
		case chat.Delivered:
			b = chat.EncodeDelivered(c)
		}
		got, err := chat.DecodeCommand(b)
		if err != nil || !equalCommands(got, c) {
			t.Errorf("round trip of %+v = %+v, %v", c, got, err)
		}
	}
}

func equalCommands(a, b chat.Command) bool {
	x, ok1 := a.(chat.CreateOutHook)
	y, ok2 := b.(chat.CreateOutHook)
	if ok1 && ok2 {
		return strings.Join(x.Triggers, ",") == strings.Join(y.Triggers, ",") && x.Room == y.Room && x.ID == y.ID && x.URL == y.URL && x.Secret == y.Secret && x.Admin == y.Admin && x.Name == y.Name && x.User == y.User
	}
	return a == b
}

// newOutHookService is a service whose URL check refuses hosts named
// "private.example" as the node's guard would refuse a private address.
func newOutHookService(t *testing.T) (*chat.Service, *statetest.Replicator) {
	t.Helper()
	r := statetest.NewReplicator(1, chat.StateMachine{})
	r.Freeze(statetest.Start)
	check := func(_ context.Context, u string) error {
		if strings.Contains(u, "private.example") {
			return errs.New(errs.Forbidden, "url: a private address")
		}
		return nil
	}
	return chat.NewService(r, chat.Config{MaxText: 64, Hasher: passwordtest.Hasher(), CheckHookURL: check}), r
}

func due(t *testing.T, s *chat.Service, r *statetest.Replicator) []chat.Delivery {
	t.Helper()
	ds, err := s.DueDeliveries(ctx, 1, r.Now().UnixMilli(), 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestService_OutHooks(t *testing.T) {
	s, r := newOutHookService(t)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	mustJoin(t, s, "bob", "ops", "")

	t.Run("refusals", func(t *testing.T) {
		_, err := s.CreateOutHook(ctx, "bob", "ops", chat.OutHookRequest{Name: "x", URL: "https://a.example/"}, false)
		wantCode(t, err, errs.Forbidden)
		_, err = s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "x", URL: "https://private.example/"}, false)
		wantCode(t, err, errs.Forbidden)
		_, err = s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "x", URL: "file:///etc/passwd"}, false)
		wantCode(t, err, errs.Invalid)
		_, err = s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "x", URL: "https://a.example/", TriggerWords: make([]string, chat.MaxTriggerWords+1)}, false)
		wantCode(t, err, errs.Invalid)
		off := chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher()})
		_, err = off.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "x", URL: "https://a.example/"}, false)
		wantCode(t, err, errs.Forbidden)
	})

	all, err := s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "all", URL: "https://a.example/all"}, false)
	if err != nil || all.Secret == "" {
		t.Fatalf("CreateOutHook = %+v, %v", all, err)
	}
	dep, err := s.CreateOutHook(ctx, "root", "ops", chat.OutHookRequest{Name: "dep", URL: "https://a.example/dep", TriggerWords: []string{"deploy"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	post := func(user, text string, to ...string) uint64 {
		t.Helper()
		res, err := s.Post(ctx, user, "ops", text, to, "")
		if err != nil {
			t.Fatal(err)
		}
		return res.Seq
	}
	s1 := post("bob", "deploy v1")
	s2 := post("bob", "hello")
	post("bob", "deploy secretly", "alice") // a whisper fires nothing
	in := mustHook(t, s, "alice", "ops", "bot")
	hp, err := hookPost(s, in, in.Secret, "", "Deploy from CI")
	if err != nil {
		t.Fatal(err)
	}
	s3 := hp.Seq

	ds := due(t, s, r)
	got := map[string]chat.Delivery{}
	for _, d := range ds {
		got[d.Payload.ID] = d
	}
	want := []string{chat.DeliveryID(all.ID, s1), chat.DeliveryID(dep.ID, s1), chat.DeliveryID(all.ID, s2), chat.DeliveryID(all.ID, s3), chat.DeliveryID(dep.ID, s3)}
	if len(ds) != len(want) {
		t.Fatalf("due %d deliveries, want %d: %+v", len(ds), len(want), ds)
	}
	for _, id := range want {
		d, ok := got[id]
		if !ok || d.Attempt != 1 || d.Secret == "" || d.URL == "" {
			t.Fatalf("delivery %s: %+v", id, d)
		}
	}
	if p := got[chat.DeliveryID(dep.ID, s3)].Payload; p.Sender != "hook:bot" || p.Text != "Deploy from CI" || p.Room != "ops" || p.Seq != s3 {
		t.Fatalf("payload %+v", p)
	}
	skipped, err := s.DueDeliveries(ctx, 1, r.Now().UnixMilli(), 2, func(d chat.Delivery) bool { return d.Hook == all.ID })
	if err != nil || len(skipped) != 2 || skipped[0].Hook != dep.ID || skipped[1].Hook != dep.ID {
		t.Fatalf("skipping hook %s, limit 2: %+v, %v", all.ID, skipped, err)
	}

	t.Run("a failed attempt is retried after the backoff, then given up", func(t *testing.T) {
		d := got[chat.DeliveryID(all.ID, s2)]
		for attempt := uint64(1); attempt <= chat.MaxDeliveryAttempts; attempt++ {
			if err := s.RecordDelivery(ctx, 1, d, 503, "busy", false); err != nil {
				t.Fatal(err)
			}
			if attempt == chat.MaxDeliveryAttempts {
				break
			}
			for _, x := range due(t, s, r) {
				if x.Seq == s2 && x.Hook == all.ID {
					t.Fatalf("attempt %d due again at once", attempt)
				}
			}
			r.Advance(time.Duration(chat.DeliveryBackoffMs(attempt)+1) * time.Millisecond)
			found := false
			for _, x := range due(t, s, r) {
				if x.Seq == s2 && x.Hook == all.ID {
					d, found = x, true
				}
			}
			if !found || d.Attempt != attempt+1 {
				t.Fatalf("after attempt %d and its backoff: found %v, attempt %d", attempt, found, d.Attempt)
			}
		}
		r.Advance(time.Hour)
		for _, x := range due(t, s, r) {
			if x.Seq == s2 && x.Hook == all.ID {
				t.Fatalf("due after %d attempts", chat.MaxDeliveryAttempts)
			}
		}
		log, err := s.Deliveries(ctx, "alice", "ops", all.ID, false)
		if err != nil || len(log) != chat.MaxDeliveryAttempts || log[0].Outcome != chat.OutcomeGaveUp || log[1].Outcome != chat.OutcomeRetry || log[0].Status != 503 {
			t.Fatalf("log %+v, %v", log, err)
		}
	})

	t.Run("delivered, deleted message, deleted hook", func(t *testing.T) {
		if err := s.RecordDelivery(ctx, 1, got[chat.DeliveryID(all.ID, s1)], 200, "", true); err != nil {
			t.Fatal(err)
		}
		// A repeated record (two deliverers) is logged and changes nothing else.
		if err := s.RecordDelivery(ctx, 1, got[chat.DeliveryID(all.ID, s1)], 204, "", true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteMessage(ctx, "alice", "ops", s3, false, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteOutHook(ctx, "alice", "ops", dep.ID, false); err != nil {
			t.Fatal(err)
		}
		rest := due(t, s, r)
		if len(rest) != 3 {
			t.Fatalf("due %+v", rest)
		}
		for _, d := range rest {
			if d.Drop == "" {
				t.Fatalf("%s not dropped", d.Payload.ID)
			}
			if err := s.RecordDelivery(ctx, 1, d, 0, "", false); err != nil {
				t.Fatal(err)
			}
		}
		if rest := due(t, s, r); len(rest) != 0 {
			t.Fatalf("due after drops: %+v", rest)
		}
		log, _ := s.Deliveries(ctx, "alice", "ops", all.ID, false)
		if log[0].Outcome != chat.OutcomeDropped || log[1].Outcome != chat.OutcomeDelivered || log[2].Outcome != chat.OutcomeDelivered {
			t.Fatalf("log %+v", log[:3])
		}
		_, err := s.Deliveries(ctx, "alice", "ops", dep.ID, false)
		wantCode(t, err, errs.NotFound)
	})

	t.Run("the log keeps the last DeliveryLogSize attempts", func(t *testing.T) {
		for i := 0; i < chat.DeliveryLogSize+5; i++ {
			seq := post("bob", "x")
			if err := s.RecordDelivery(ctx, 1, chat.Delivery{Room: "ops", Hook: all.ID, Seq: seq, Due: r.Now().UnixMilli(), Attempt: 1}, 200, "", true); err != nil {
				t.Fatal(err)
			}
		}
		log, _ := s.Deliveries(ctx, "alice", "ops", all.ID, false)
		if len(log) != chat.DeliveryLogSize {
			t.Fatalf("log of %d entries", len(log))
		}
	})

	t.Run("deleting the room deletes its hooks", func(t *testing.T) {
		if err := s.Delete(ctx, "alice", "ops", false, ""); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
		hooks, err := s.OutHooks(ctx, "alice", "ops", false)
		if err != nil || len(hooks) != 0 {
			t.Fatalf("hooks of the new room: %+v, %v", hooks, err)
		}
	})
}

func TestService_RecordDeliveryCleansTheError(t *testing.T) {
	s, r := newOutHookService(t)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	h, err := s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "x", URL: "https://a.example/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Post(ctx, "alice", "ops", "hi", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	d := due(t, s, r)[0]
	if err := s.RecordDelivery(ctx, 1, d, 500, "bad\x1b[31m\xff"+strings.Repeat("é", 300), false); err != nil {
		t.Fatal(err)
	}
	log, err := s.Deliveries(ctx, "alice", "ops", h.ID, false)
	if err != nil || len(log) != 1 || log[0].Seq != res.Seq {
		t.Fatalf("log %+v, %v", log, err)
	}
	if e := log[0].Error; len(e) > chat.MaxDeliveryError || strings.ContainsAny(e, "\x1b\xff") || !strings.HasPrefix(e, "bad [31m?é") {
		t.Fatalf("logged error %q", e)
	}
}

// Outgoing hook commands wait until every node speaks HookProtocol; a
// refused creation proposes nothing.
func TestService_OutHooksWaitForTheUpgrade(t *testing.T) {
	protocol := 1
	r := statetest.NewReplicator(1, chat.StateMachine{})
	s := chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher(), ClusterProtocol: func() int { return protocol },
		CheckHookURL: func(context.Context, string) error { return nil }})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	before, _ := r.Calls()
	_, err := s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "ci", URL: "https://a.example/"}, false)
	wantCode(t, err, errs.UpgradeInProgress)
	if after, _ := r.Calls(); after != before {
		t.Fatalf("a refused creation proposed %d commands", after-before)
	}
	protocol = chat.HookProtocol
	h, err := s.CreateOutHook(ctx, "alice", "ops", chat.OutHookRequest{Name: "ci", URL: "https://a.example/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	protocol = 1
	wantCode(t, s.DeleteOutHook(ctx, "alice", "ops", h.ID, false), errs.UpgradeInProgress)
}

package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/api/openapi/openapitest"
	"github.com/parley-chat/parley/internal/servicetest"
)

// fullServer is a real api.Server with every domain over in-memory
// replicators (servicetest); base is its URL.
type fullServer struct {
	*servicetest.Stack
	base string
	hc   *http.Client
}

func newFullServer(t *testing.T) *fullServer {
	t.Helper()
	st := servicetest.New(t, servicetest.Options{})
	srv := httptest.NewServer(openapitest.Handler(t, api.New(api.Config{
		KV:        st.KV,
		KVWatch:   st.KVWatch,
		Status:    &fakeStatus{ready: true},
		Accounts:  st.Accounts,
		Rooms:     st.Rooms,
		Queues:    st.Queues,
		Links:     st.Links,
		PublicURL: "https://par.ly",
	}).Handler()))
	t.Cleanup(srv.Close)
	return &fullServer{Stack: st, base: srv.URL, hc: srv.Client()}
}

// user registers name and returns a client signed in as name.
func (s *fullServer) user(t *testing.T, name string) *client.Client {
	t.Helper()
	c := client.New(s.base, client.WithHTTPClient(s.hc))
	ctx := context.Background()
	if _, err := c.Register(ctx, name, "password of "+name); err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	sess, err := c.Login(ctx, name, "password of "+name)
	if err != nil || sess.Username != name || c.Token() != sess.Token || sess.ExpiresAt == 0 {
		t.Fatalf("login %s = %+v, %v; token kept %q", name, sess, err, c.Token())
	}
	return c
}

func TestClientAPI_Accounts(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	anon := client.New(s.base, client.WithHTTPClient(s.hc))
	u, err := anon.Register(ctx, "Alice", "password of Alice")
	if err != nil || u.Username != "Alice" || !u.Admin {
		t.Fatalf("register = %+v, %v", u, err)
	}
	_, err = anon.Register(ctx, "alice", "password of alice")
	mustAPIError(t, err, 409, "conflict")
	_, err = anon.Register(ctx, "bad name", "password")
	mustAPIError(t, err, 400, "invalid")
	_, err = anon.Login(ctx, "alice", "wrong password")
	mustAPIError(t, err, 401, "unauthorized")
	if anon.Token() != "" {
		t.Fatal("a failed login kept a token")
	}
	_, err = anon.ListRooms(ctx)
	mustAPIError(t, err, 401, "unauthorized")

	c := s.user(t, "bob")
	token := c.Token()
	if _, err := c.ListRooms(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Logout(ctx); err != nil || c.Token() != "" {
		t.Fatalf("logout: %v, token %q", err, c.Token())
	}
	old := client.New(s.base, client.WithHTTPClient(s.hc), client.WithToken(token))
	_, err = old.ListRooms(ctx)
	mustAPIError(t, err, 401, "unauthorized")
}

func TestClientAPI_Rooms(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")
	cal := s.user(t, "cal")

	r, err := ann.CreateRoom(ctx, client.RoomSpec{Name: "Den", Private: true, Password: "open sesame", MaxMembers: 2})
	if err != nil || r.Name != "den" || !r.Private || r.Members != 1 || r.MaxMembers != 2 || r.LastSeq != 1 {
		t.Fatalf("create = %+v, %v", r, err)
	}
	_, err = ben.CreateRoom(ctx, client.RoomSpec{Name: "den"})
	mustAPIError(t, err, 409, "conflict")
	_, err = ben.JoinRoom(ctx, "den", "wrong password")
	mustAPIError(t, err, 403, "forbidden")
	if r, err = ben.JoinRoom(ctx, "den", "open sesame"); err != nil || r.Members != 2 {
		t.Fatalf("join = %+v, %v", r, err)
	}
	_, err = cal.JoinRoom(ctx, "den", "open sesame")
	mustAPIError(t, err, 409, "conflict")

	msg, err := ann.Post(ctx, "den", "hello", client.PostOptions{})
	if err != nil || msg.Sender != "ann" || msg.Seq != 3 {
		t.Fatalf("post = %+v, %v", msg, err)
	}
	wsp, err := ann.Post(ctx, "den", "psst", client.PostOptions{To: []string{"ben"}})
	if err != nil || wsp.Seq != 4 {
		t.Fatalf("whisper = %+v, %v", wsp, err)
	}
	events, err := ben.History(ctx, "den", client.HistoryOptions{})
	if err != nil || len(events) != 4 || events[3].Kind != "whisper" || events[3].Text != "psst" || events[3].To[0] != "ben" {
		t.Fatalf("history = %+v, %v", events, err)
	}
	page, err := ben.History(ctx, "den", client.HistoryOptions{HasAfter: true, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != 1 {
		t.Fatalf("after=0 limit=1 = %+v, %v", page, err)
	}
	page, err = ben.History(ctx, "den", client.HistoryOptions{Before: 3, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != 2 {
		t.Fatalf("before=3 limit=1 = %+v, %v", page, err)
	}
	_, err = cal.History(ctx, "den", client.HistoryOptions{})
	mustAPIError(t, err, 403, "forbidden")

	rooms, err := ben.ListRooms(ctx)
	if err != nil || len(rooms) != 1 || !rooms[0].Member || rooms[0].LastSeq != 4 || rooms[0].LastRead != 2 {
		t.Fatalf("rooms = %+v, %v", rooms, err)
	}
	if marker, err := ben.MarkRead(ctx, "den", 4); err != nil || marker != 4 {
		t.Fatalf("mark read = %d, %v", marker, err)
	}
	members, err := ann.Members(ctx, "den")
	if err != nil || len(members) != 2 || members[0].Username != "ann" || members[0].JoinedAt == 0 {
		t.Fatalf("members = %+v, %v", members, err)
	}
	if err := ben.LeaveRoom(ctx, "den"); err != nil {
		t.Fatal(err)
	}
	mustAPIError(t, ben.DeleteRoom(ctx, "den"), 403, "forbidden")
	if err := ann.DeleteRoom(ctx, "den"); err != nil {
		t.Fatal(err)
	}
	_, err = ann.Members(ctx, "den")
	mustAPIError(t, err, 404, "not_found")

	t.Run("idempotency key", func(t *testing.T) {
		if _, err := ann.CreateRoom(ctx, client.RoomSpec{Name: "again"}); err != nil {
			t.Fatal(err)
		}
		kctx := client.WithIdempotencyKey(ctx, "p-1")
		first, err := ann.Post(kctx, "again", "once", client.PostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		retry, err := ann.Post(kctx, "again", "once", client.PostOptions{})
		if err != nil || retry != first {
			t.Fatalf("retry = %+v, %v; want %+v", retry, err, first)
		}
	})
}

func TestClientAPI_Queues(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")

	q, err := ann.CreateQueue(ctx, "jobs")
	if err != nil || q.Name != "jobs" || q.Creator != "ann" || q.CreatedAt == 0 {
		t.Fatalf("create = %+v, %v", q, err)
	}
	_, err = ben.CreateQueue(ctx, "jobs")
	mustAPIError(t, err, 409, "conflict")
	sent, err := ann.Send(ctx, "jobs", "for ben", client.SendOptions{To: "ben"})
	if err != nil || sent.ID != 1 || sent.Ts == 0 {
		t.Fatalf("send = %+v, %v", sent, err)
	}
	if _, found, err := ann.Peek(ctx, "jobs", ""); err != nil || found {
		t.Fatalf("ann's peek = %v, %v; the message is ben's", found, err)
	}
	m, found, err := ben.Peek(ctx, "jobs", "ann")
	if err != nil || !found || m.ID != 1 || m.To != "ben" || m.Body != "for ben" {
		t.Fatalf("ben's peek = %+v %v %v", m, found, err)
	}
	waiting, err := ben.ListQueues(ctx, true)
	if err != nil || len(waiting) != 1 || waiting[0].Messages != 1 {
		t.Fatalf("waiting = %+v, %v", waiting, err)
	}
	if waiting, err = ann.ListQueues(ctx, true); err != nil || len(waiting) != 0 {
		t.Fatalf("ann's waiting = %+v, %v", waiting, err)
	}
	m, found, err = ben.Receive(ctx, "jobs", client.ReceiveOptions{AckTimeout: time.Second})
	if err != nil || !found || m.Receipt == "" || m.LeaseExpiresAt == 0 {
		t.Fatalf("leased receive = %+v %v %v", m, found, err)
	}
	s.QueueRep.Advance(2 * time.Second)
	mustAPIError(t, ben.Ack(ctx, "jobs", m.Receipt), 409, "conflict")
	m2, found, err := ben.Receive(ctx, "jobs", client.ReceiveOptions{AckTimeout: time.Second})
	if err != nil || !found || m2.ID != m.ID || m2.Deliveries != 2 {
		t.Fatalf("redelivery = %+v %v %v", m2, found, err)
	}
	if err := ben.Ack(ctx, "jobs", m2.Receipt); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ben.Receive(ctx, "jobs", client.ReceiveOptions{Wait: 50 * time.Millisecond}); err != nil || found {
		t.Fatalf("receive from an empty queue = %v, %v", found, err)
	}
	all, err := ben.ListQueues(ctx, false)
	if err != nil || len(all) != 1 || all[0].LastID != 1 || all[0].Messages != 0 {
		t.Fatalf("queues = %+v, %v", all, err)
	}
	mustAPIError(t, ben.DeleteQueue(ctx, "jobs"), 403, "forbidden")
	if err := ann.DeleteQueue(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	_, _, err = ann.Peek(ctx, "jobs", "")
	mustAPIError(t, err, 404, "not_found")
}

func TestClientAPI_Links(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")

	l, err := ann.CreateLink(ctx, "https://example.com/page", client.LinkOptions{Code: "ex"})
	if err != nil || l.Code != "ex" || l.ShortURL != "https://par.ly/s/ex" || l.CreatedBy != "ann" {
		t.Fatalf("create = %+v, %v", l, err)
	}
	_, err = ben.CreateLink(ctx, "https://example.com/other", client.LinkOptions{Code: "ex"})
	mustAPIError(t, err, 409, "conflict")
	_, err = ben.CreateLink(ctx, "ftp://example.com/file", client.LinkOptions{})
	mustAPIError(t, err, 400, "invalid")
	gen, err := ann.CreateLink(ctx, "http://example.org", client.LinkOptions{})
	if err != nil || len(gen.Code) != 7 {
		t.Fatalf("generated = %+v, %v", gen, err)
	}
	anon := client.New(s.base, client.WithHTTPClient(s.hc))
	loc, err := anon.Resolve(ctx, "ex")
	if err != nil || loc != "https://example.com/page" {
		t.Fatalf("resolve = %q, %v", loc, err)
	}
	_, err = anon.Resolve(ctx, "missing")
	mustAPIError(t, err, 404, "not_found")
	mine, err := ann.MyLinks(ctx)
	if err != nil || len(mine) != 2 {
		t.Fatalf("mine = %+v, %v", mine, err)
	}
	info, err := ben.LinkInfo(ctx, "ex")
	if err != nil || info.URL != "https://example.com/page" || info.CreatedAt == 0 {
		t.Fatalf("info = %+v, %v", info, err)
	}
	mustAPIError(t, ben.DeleteLink(ctx, "ex"), 403, "forbidden")
	if err := ann.DeleteLink(ctx, "ex"); err != nil {
		t.Fatal(err)
	}
	_, err = anon.Resolve(ctx, "ex")
	mustAPIError(t, err, 404, "not_found")
	_, err = ben.LinkInfo(ctx, "ex")
	mustAPIError(t, err, 404, "not_found")
}

func TestClientAPI_IdempotencyHeader(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Idempotency-Key"))
		w.Header().Set("X-Parley-Version", "1")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := client.WithIdempotencyKey(context.Background(), "ctx-key")
	_, _ = c.KVPut(ctx, "k", nil, client.PutOptions{})
	_, _ = c.KVPut(ctx, "k", nil, client.PutOptions{IdempotencyKey: "explicit"})
	_, _ = c.KVPut(context.Background(), "k", nil, client.PutOptions{})
	if strings.Join(got, ",") != "ctx-key,explicit," {
		t.Fatalf("Idempotency-Key headers %q", got)
	}
}

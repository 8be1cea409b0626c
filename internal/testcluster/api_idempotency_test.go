package testcluster_test

import (
	"net/http"
	"testing"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// An idempotency key sent again with another request, through any node, is
// refused with 422 idempotency_key_reused and changes nothing; the same
// request again still gets its first result.
func TestAPI_IdempotencyKeyReusedForAnotherRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, NoSync: true})
	waitProtocol(t, c, 2) // keys are compared once every node is known to
	ctx := apiCtx(t)
	cl := func(i int) *client.Client { return c.Client(i) }

	first, err := cl(0).KVPut(ctx, "idem/a", []byte("v1"), client.PutOptions{IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := cl(2).KVPut(ctx, "idem/a", []byte("v1"), client.PutOptions{IdempotencyKey: "k1"}); err != nil || again != first {
		t.Fatalf("the same put again: version %d, %v; want %d", again, err, first)
	}
	_, err = cl(1).KVPut(ctx, "idem/a", []byte("v2"), client.PutOptions{IdempotencyKey: "k1"})
	mustStatus(t, err, http.StatusUnprocessableEntity, "idempotency_key_reused")
	_, err = cl(2).KVPut(ctx, "idem/a", []byte("v1"), client.PutOptions{IdempotencyKey: "k1", IfVersion: first})
	mustStatus(t, err, http.StatusUnprocessableEntity, "idempotency_key_reused")
	if v, version := testcluster.MustGet(t, cl(1), "idem/a", client.GetOptions{}); v != "v1" || version != first {
		t.Fatalf("idem/a = %q version %d after the refused puts; want v1, %d", v, version, first)
	}

	// The same key on a delete of the key: refused, the key stays. (Records
	// are kept per partition: a key reused for a request on another
	// partition is a new request there.)
	err = cl(1).KVDelete(ctx, "idem/a", client.DeleteOptions{IdempotencyKey: "k1"})
	mustStatus(t, err, http.StatusUnprocessableEntity, "idempotency_key_reused")
	if v, _ := testcluster.MustGet(t, cl(2), "idem/a", client.GetOptions{}); v != "v1" {
		t.Fatalf("idem/a = %q after a refused delete", v)
	}

	// A chat post: the key in the body (request_id) or the header.
	poster := signUp(t, c, 0, 0, "poster")
	if _, err := poster.CreateRoom(ctx, client.RoomSpec{Name: "idem"}); err != nil {
		t.Fatal(err)
	}
	kctx := client.WithIdempotencyKey(ctx, "post-1")
	msg, err := as(c, 1, poster).Post(kctx, "idem", "once", client.PostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := as(c, 2, poster).Post(kctx, "idem", "once", client.PostOptions{}); err != nil || again != msg {
		t.Fatalf("the same post again = %+v, %v; want %+v", again, err, msg)
	}
	_, err = as(c, 0, poster).Post(kctx, "idem", "something else", client.PostOptions{})
	mustStatus(t, err, http.StatusUnprocessableEntity, "idempotency_key_reused")
	hist, err := as(c, 2, poster).History(ctx, "idem", client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range hist {
		if ev.Text == "something else" {
			t.Fatalf("the refused post is in the history: %+v", hist)
		}
	}
	// Another key is another request.
	if _, err := cl(1).KVPut(ctx, "idem/a", []byte("v2"), client.PutOptions{IdempotencyKey: "k2"}); err != nil {
		t.Fatal(err)
	}
}

//go:build docker

package compose

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// The room and queue every round writes to.
const room, queue = "ops", "jobs"

// writer writes to every service, in turn through each node it is given,
// and remembers every write the cluster acknowledged.
type writer struct {
	token string
	nodes []*client.Client
	next  int

	kv    map[string]string // key -> value
	posts []string          // room messages, in the order acknowledged
	sent  []string          // queue message bodies, in the order acknowledged
	links map[string]string // code -> long URL
}

func newWriter(token string) *writer {
	return &writer{token: token, kv: map[string]string{}, links: map[string]string{}}
}

// setNodes makes the writer use the nodes at urls.
func (w *writer) setNodes(urls ...string) {
	w.nodes = nil
	for _, u := range urls {
		w.nodes = append(w.nodes, client.New(u, client.WithToken(w.token)))
	}
}

// do runs one write until the cluster acknowledges it, moving to the next
// node when one fails in a way worth retrying (a retryable answer, or no
// answer at all: the node may be the one that just died). Every attempt
// carries the same idempotency key, so the write applies once.
func (w *writer) do(ctx context.Context, t *testing.T, what string, fn func(context.Context, *client.Client) error) {
	t.Helper()
	ctx = client.WithIdempotencyKey(ctx, "composetest-"+randomName()+randomName())
	deadline := time.Now().Add(90 * time.Second)
	for attempt := 0; ; attempt++ {
		c := w.nodes[(w.next+attempt)%len(w.nodes)]
		err := fn(ctx, c)
		if err == nil {
			w.next++
			return
		}
		var ce *client.Error
		if errors.As(err, &ce) && !ce.Retryable || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setup creates the room and the queue.
func (w *writer) setup(ctx context.Context, t *testing.T) {
	w.do(ctx, t, "create room", func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateRoom(ctx, client.RoomSpec{Name: room})
		return err
	})
	w.do(ctx, t, "create queue", func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateQueue(ctx, queue)
		return err
	})
}

// writeRound writes n values to each service: a key, a room message, a
// queue message and a short link.
func (w *writer) writeRound(ctx context.Context, t *testing.T, phase string, n int) {
	for i := range n {
		key, val := fmt.Sprintf("%s/%d", phase, i), fmt.Sprintf("value %s %d", phase, i)
		w.do(ctx, t, "put "+key, func(ctx context.Context, c *client.Client) error {
			_, err := c.KVPut(ctx, key, []byte(val), client.PutOptions{})
			return err
		})
		w.kv[key] = val
		text := fmt.Sprintf("message %s %d", phase, i)
		w.do(ctx, t, "post "+text, func(ctx context.Context, c *client.Client) error {
			_, err := c.Post(ctx, room, text, client.PostOptions{})
			return err
		})
		w.posts = append(w.posts, text)
		body := fmt.Sprintf("job %s %d", phase, i)
		w.do(ctx, t, "send "+body, func(ctx context.Context, c *client.Client) error {
			_, err := c.Send(ctx, queue, body, client.SendOptions{})
			return err
		})
		w.sent = append(w.sent, body)
		code, long := fmt.Sprintf("%s-%d", phase, i), fmt.Sprintf("https://example.org/%s/%d", phase, i)
		w.do(ctx, t, "link "+code, func(ctx context.Context, c *client.Client) error {
			_, err := c.CreateLink(ctx, long, client.LinkOptions{Code: code})
			return err
		})
		w.links[code] = long
	}
}

// waitReplicated waits until the node at url reports no partition
// under-replicated: the restarted node has caught up.
func (w *writer) waitReplicated(t *testing.T, url string) {
	t.Helper()
	testcluster.WaitReplicated(t, client.New(url, client.WithToken(w.token)), 2*time.Minute)
}

// check reads every acknowledged write through c: each key's value, the
// room's messages in order with none twice, each link.
func (w *writer) check(ctx context.Context, t *testing.T, c *client.Client) {
	for key, want := range w.kv {
		got, _, err := c.KVGet(ctx, key, client.GetOptions{})
		if err != nil || string(got) != want {
			t.Errorf("key %s = %q, %v; want %q", key, got, err, want)
		}
	}
	var texts []string
	var after uint64
	for {
		evs, err := c.History(ctx, room, client.HistoryOptions{After: after, HasAfter: true, Limit: 100})
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Kind == "message" {
				texts = append(texts, ev.Text)
			}
			after = ev.Seq
		}
	}
	if !slices.Equal(texts, w.posts) {
		t.Errorf("room history has %d messages %q,\nwant the %d acknowledged %q", len(texts), texts, len(w.posts), w.posts)
	}
	for code, want := range w.links {
		l, err := c.LinkInfo(ctx, code)
		if err != nil || l.URL != want {
			t.Errorf("link %s = %+v, %v; want %s", code, l, err, want)
		}
	}
}

// drainQueue receives every message of the queue through c: each body
// acknowledged is delivered once, in the order sent, and then the queue is
// empty.
func (w *writer) drainQueue(ctx context.Context, t *testing.T, c *client.Client) {
	var got []string
	for range len(w.sent) + 1 {
		msg, found, err := c.Receive(ctx, queue, client.ReceiveOptions{})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if !found {
			break
		}
		got = append(got, msg.Body)
	}
	if !slices.Equal(got, w.sent) {
		t.Errorf("queue delivered %d messages %q,\nwant the %d acknowledged %q", len(got), got, len(w.sent), w.sent)
	}
}

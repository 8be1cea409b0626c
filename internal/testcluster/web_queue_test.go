package testcluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestWeb_QueuePage drives the queue pages in headless Chromium: the list
// with its counts, a queue's stats, a leased receive acknowledged from the
// page, the dead-letter browser showing where a dead letter came from and
// why, and a redrive that moves it back.
func TestWeb_QueuePage(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := testcluster.New(t, testcluster.Options{Nodes: 1, ReplicationFactor: 1, NoSync: true})
	base := "http://" + c.Node(0).HTTPAddr()
	ann := signUp(t, c, 0, 0, "ann")
	ctx := apiCtx(t)
	if _, err := ann.CreateQueue(ctx, "dlq"); err != nil {
		t.Fatal(err)
	}
	dlq := "dlq"
	if _, err := ann.CreateQueueWith(ctx, "jobs", client.QueueSettings{DeadLetter: &dlq}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"poison pill", "job two", "job three"} {
		if _, err := ann.Send(ctx, "jobs", body, client.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := ann.Receive(ctx, "jobs", client.ReceiveOptions{AckTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := ann.Nack(ctx, "jobs", m.Receipt, client.NackOptions{Dead: true, Reason: "cannot parse"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the dead letter moved", func() bool {
		q, err := ann.GetQueue(ctx, "dlq")
		return err == nil && q.Stats.DeadLetters == 1
	})

	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	session := fmt.Sprintf(`{"token":%s,"username":"ann","expires_at":%d}`, js(ann.Token()), time.Now().Add(time.Hour).UnixMilli())
	b.do("open the queues page", chromedp.Navigate(base+"/"), chromedp.WaitReady(S("#main")),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('parley.session', %s)`, js(session))),
		chromedp.Navigate(base+"/#/queues"), chromedp.Reload(), chromedp.WaitVisible(S(`tr[data-queue="jobs"]`)))
	b.waitFor("the list counts jobs' ready messages", `document.querySelector('tr[data-queue="jobs"] td:nth-child(2)').textContent === '2'`)

	b.do("open jobs", chromedp.Click(S(`tr[data-queue="jobs"] button`)))
	b.waitFor("jobs' stats", `(() => { const d = document.querySelector('.queue-stats [data-stat="dead_lettered"]'); return d && d.textContent === '1'; })()`)
	b.do("receive under a lease", chromedp.Click(S(`.queue-detail input[name=lease]`)), chromedp.Click(S(".queue-detail .buttons button.primary")))
	b.waitFor("the leased message", hasText(".queue-msg .text", "job two"))
	b.do("ack it", chromedp.Click(S(".queue-msg .settle button")))
	b.waitFor("acknowledged", `document.querySelector('.queue-msg').textContent.includes('Acknowledged.')`)
	b.waitFor("one message left", `document.querySelector('.queue-stats [data-stat="ready"]').textContent === '1'`)

	b.do("open the dead-letter queue", chromedp.Click(S(`tr[data-queue="dlq"] button`)))
	b.waitFor("the dead letter listed", `(() => { const r = document.querySelector('.queue-browse tr[data-message]');
		return r && r.querySelector('.origin').textContent === 'jobs' && r.querySelector('.reason').textContent === 'rejected: cannot parse'; })()`)
	b.screenshot("queue-dead-letters")
	b.do("redrive", chromedp.Click(S(".queue-admin button.redrive")))
	b.waitFor("redriven", `document.querySelector('.queue-out').textContent.startsWith('Moved 1 dead letters')`)
	poll.Until(t, 20*time.Second, "the redriven message back in jobs", func() bool {
		q, err := ann.GetQueue(ctx, "jobs")
		return err == nil && q.Stats.Ready == 2
	})
	b.checkConsole()
}

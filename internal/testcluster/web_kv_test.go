package testcluster_test

import (
	"fmt"

	"github.com/parley-chat/parley/client"
)

// history opens key, changes it twice through the API, and reads its kept
// versions on the page: newest first, each put's value one click away.
func (k kvPage) history(key string) {
	k.t.Helper()
	k.put(k.other, key, []byte("second"))
	k.put(k.other, key, []byte("third"))
	k.open(key)
	k.b.do("open the history", click(".kv-detail .kv-history-btn"))
	k.b.waitFor("three versions, newest first", `(() => { const r = [...document.querySelectorAll('.kv-history tbody tr')];
		return r.length === 3 && r[0].textContent.includes('third') && r[2].textContent.includes('value 05'); })()`)
	k.b.do("open the oldest value", click(".kv-history tbody tr:last-child button"))
	k.b.waitFor("the oldest value shown", hasText(".kv-history-value .kv-old", "value 05"))
	k.b.do("back to the key", click(".kv-history-back"))
	k.b.waitFor("the key again", hasText(".kv-detail .kv-value", "third"))
}

// watchLive follows the prefix: another user's put, delete and new key
// appear in the live feed (newest first within a partition) as they happen, the list gains the new key and
// the open key refreshes by itself.
func (k kvPage) watchLive() {
	k.t.Helper()
	open := k.prefix + "k07"
	k.open(open)
	k.b.do("watch live", click(".kv-watch"))
	k.b.waitFor("the watch started", `(document.querySelector('.kv-live-status') || {textContent: ''}).textContent.startsWith('Watching')`)
	k.put(k.other, open, []byte("changed live"))
	k.put(k.other, k.prefix+"a-new", []byte("born live"))
	if err := k.other.KVDelete(apiCtx(k.t), k.prefix+"k08", client.DeleteOptions{}); err != nil {
		k.t.Fatalf("delete k08: %v", err)
	}
	// The keys may live in different partitions, whose changes come in no
	// defined order among each other: each must appear, once.
	k.b.waitFor("three live changes", fmt.Sprintf(`(() => { const li = [...document.querySelectorAll('.kv-live-item')].map((e) => e.textContent);
		const one = (f) => li.filter(f).length === 1;
		return li.length === 3 && one((t) => t.includes(%s) && t.includes('deleted')) && one((t) => t.includes('born live')) && one((t) => t.includes('changed live')); })()`, js(k.prefix+"k08")))
	k.b.waitFor("the open key refreshed", hasText(".kv-detail .kv-value", "changed live"))
	k.b.waitFor("the new key listed", fmt.Sprintf(`document.querySelector('.kv-keys tr[data-key=%s]') !== null`, js(k.prefix+"a-new")))
	k.b.check("no markup from values in the feed", `document.querySelector('.kv-live img') === null ? '' : 'an img was parsed'`)
	k.b.do("stop watching", click(".kv-watch"))
	k.b.check("the feed hidden", `document.querySelector('.kv-live').hidden ? '' : 'still shown'`)
}

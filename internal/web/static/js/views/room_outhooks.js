// views/room_outhooks.js: the owner's part of the room settings panel for
// outgoing webhooks: make one (a name, an http(s) URL and optional trigger
// words; its signing secret shown once with a copy button), list them with
// their latest delivery attempts, and delete them. The server decides which
// URLs are allowed (no private addresses unless the operator allows them)
// and its refusal is shown as it comes. Text from users is set as text.

import * as api from '../api.js';
import {h, replace, field, fieldError} from '../dom.js';
import {copyButton} from './links.js';

// LOG_SHOWN is how many delivery attempts each hook shows.
const LOG_SHOWN = 5;

// outHooksSection returns {el, refresh} for the settings panel.
export function outHooksSection(v) {
  const name = field('Name', {name: 'outhook_name', maxlength: 64, autocomplete: 'off', placeholder: 'ci'});
  const url = field('URL', {name: 'outhook_url', type: 'url', maxlength: 2048, autocomplete: 'off', placeholder: 'https://ci.example/parley'});
  const triggers = field('Trigger words (optional, comma separated; none: every message)', {name: 'outhook_triggers', autocomplete: 'off', placeholder: 'deploy, ship'});
  const result = h('div', {class: 'outhook-result', 'aria-live': 'polite'});
  const list = h('div', {class: 'outhooks-list'});
  const create = h('form', {class: 'stack outhook-create'}, name.el, url.el, triggers.el,
    h('div', {class: 'row'}, h('button', {type: 'submit'}, 'Make outgoing webhook')));
  const el = h('fieldset', {class: 'outhooks stack', hidden: true},
    h('legend', {}, 'Outgoing webhooks'),
    h('p', {class: 'muted'}, 'Messages (or those starting with a trigger word) are POSTed as signed JSON to the URL, retried until it answers 2xx.'),
    create, result, list);

  const attempts = async (hk) => {
    try {
      const log = (await api.outHookDeliveries(v.room, hk.id)).slice(0, LOG_SHOWN);
      if (!log.length) return h('p', {class: 'muted'}, 'No deliveries yet.');
      return h('ul', {class: 'plain deliveries'}, log.map((d) => h('li', {class: 'delivery ' + d.outcome},
        `#${d.seq} attempt ${d.attempt}: ${d.outcome}`, d.status ? ` (${d.status})` : '', d.error ? ` ${d.error}` : '',
        h('span', {class: 'muted'}, ' ' + new Date(d.ts).toLocaleString()))));
    } catch (e) {
      return h('p', {class: 'form-error'}, 'Cannot load the deliveries: ' + e.message);
    }
  };
  const row = async (hk) => h('li', {class: 'stack', 'data-id': hk.id},
    h('div', {class: 'row'},
      h('span', {}, hk.name), h('span', {class: 'muted'}, hk.url),
      h('span', {class: 'muted'}, hk.trigger_words.length ? hk.trigger_words.join(', ') : 'every message'),
      h('button', {type: 'button', class: 'link-button danger delete-outhook', onclick: async () => {
        try { await api.deleteOutHook(v.room, hk.id); v.ctx.notify(`Outgoing webhook "${hk.name}" deleted.`, 'info'); refresh(); } catch (e) { v.ctx.notify(e.message, 'error'); }
      }}, 'Delete')),
    await attempts(hk));
  const refresh = async () => {
    try {
      const hs = await api.outHooks(v.room);
      replace(list, hs.length ? h('ul', {class: 'plain'}, await Promise.all(hs.map(row))) : h('p', {class: 'muted'}, 'No outgoing webhooks.'));
    } catch (e) {
      replace(list, h('p', {class: 'form-error'}, 'Cannot load the outgoing webhooks: ' + e.message));
    }
  };
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    const n = name.input.value.trim();
    const u = url.input.value.trim();
    fieldError(name.input, n ? '' : 'Name the webhook.');
    fieldError(url.input, u ? '' : 'Give the URL to POST to.');
    if (!n || !u) return;
    const words = triggers.input.value.split(',').map((w) => w.trim()).filter((w) => w);
    try {
      const hk = await api.createOutHook(v.room, {name: n, url: u, trigger_words: words});
      name.input.value = url.input.value = triggers.input.value = '';
      replace(result, h('div', {class: 'token-secret'},
        h('p', {}, h('strong', {}, 'Copy the signing secret now: it is shown only once. The receiver checks X-Parley-Signature with it.')),
        h('code', {class: 'secret outhook-secret'}, hk.secret), ' ', copyButton(hk.secret)));
      refresh();
    } catch (err) {
      fieldError(url.input, err.message);
    }
  });
  return {el, refresh};
}

// views/thread.js: the thread side panel of the room view: a message and
// its replies, live as replies and changes arrive, with its own composer.

import * as api from '../api.js';
import {h, replace, formError} from '../dom.js';
import {eventElement} from './events.js';
import {closeIcon} from './icons.js';

// panel builds the (hidden) panel of room view v.
export function panel(v) {
  const t = {root: 0, list: h('ol', {class: 'events thread-events'})};
  t.input = h('textarea', {name: 'reply', rows: 1, maxlength: 4096, placeholder: 'Reply…', 'aria-label': 'Reply'});
  t.form = h('form', {class: 'thread-composer'}, t.input, h('button', {type: 'submit', class: 'primary'}, 'Reply'));
  t.form.addEventListener('submit', (e) => { e.preventDefault(); send(v); });
  t.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(v); }
    if (e.key === 'Escape') close(v);
  });
  t.el = h('aside', {class: 'thread-panel', hidden: true, 'aria-label': 'Thread'},
    h('div', {class: 'thread-head'}, h('h2', {}, 'Thread'),
      h('button', {type: 'button', class: 'link-button close', 'aria-label': 'Close the thread', onclick: () => close(v)}, closeIcon('Close the thread'))),
    h('div', {class: 'scroller'}, t.list), t.form);
  v.threadState = t;
  return t.el;
}

// open shows the thread of message seq.
export async function open(v, seq) {
  const t = v.threadState;
  t.root = seq;
  t.seqs = new Set();
  t.el.hidden = false;
  replace(t.list);
  try {
    const page = await api.thread(v.room, seq);
    if (t.root !== seq) return;
    replace(t.list, eventElement(page.root, v.me, v.act));
    t.seqs.add(page.root.seq);
    for (const r of page.replies) added(v, r);
    t.input.focus();
  } catch (e) {
    replace(t.list, h('li', {class: 'notice error'}, e.message));
  }
}

function close(v) {
  v.threadState.root = 0;
  v.threadState.el.hidden = true;
  v.input.focus();
}

// added shows a new reply when its thread is open.
export function added(v, ev) {
  const t = v.threadState;
  if (!t || !t.root || ev.reply_to !== t.root || t.seqs.has(ev.seq)) return;
  t.seqs.add(ev.seq);
  t.list.append(eventElement(ev, v.me, v.act));
}

// changed redraws a message of the open thread.
export function changed(v, msg) {
  const t = v.threadState;
  if (!t || !t.root || !t.seqs.has(msg.seq)) return;
  const old = t.list.querySelector(`[data-seq="${msg.seq}"]`);
  if (old) old.replaceWith(eventElement(msg, v.me, v.act));
}

async function send(v) {
  const t = v.threadState;
  const text = t.input.value.trim();
  if (!text || !t.root) return;
  t.input.disabled = true;
  try {
    await api.reply(v.room, text, t.root);
    t.input.value = '';
    formError(t.form, '');
  } catch (e) {
    formError(t.form, e.message);
  } finally {
    t.input.disabled = false;
    t.input.focus();
  }
}

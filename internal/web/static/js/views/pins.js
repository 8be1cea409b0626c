// views/pins.js: the room view's pinned messages: a "Pins" button in the
// room's header with their count, and a side panel listing them (in the
// thread panel's place), each opening its message in context. Pins and
// unpins arrive as changes to their message, so the list stays current
// without asking again.

import * as api from '../api.js';
import {h, replace, fmtTime} from '../dom.js';
import {render} from '../markdown.js';
import {pinIcon, closeIcon} from './icons.js';
import * as jump from './jump.js';
import {only} from './side.js';

// mount adds the button and the (hidden) panel to room view v.
export function mount(v) {
  const p = {pins: new Map(), changes: 0}; // pins: seq -> message; changes: how many arrived
  p.count = h('span', {class: 'pins-count'});
  p.button = h('button', {type: 'button', class: 'link-button pins-button', 'aria-expanded': 'false',
    'aria-controls': 'pins-panel', title: 'Pinned messages', onclick: () => (p.el.hidden ? open(v) : close(v))},
  pinIcon('Pinned messages'), h('span', {class: 'pins-label'}, 'Pins'), p.count);
  p.list = h('ol', {class: 'pins-list'});
  p.el = h('aside', {class: 'pins-panel', id: 'pins-panel', hidden: true, 'aria-label': 'Pinned messages'},
    h('div', {class: 'thread-head'}, h('h2', {}, 'Pinned messages'),
      h('button', {type: 'button', class: 'link-button close', 'aria-label': 'Close the pinned messages', onclick: () => close(v)},
        closeIcon('Close the pinned messages'))),
    h('div', {class: 'scroller'}, p.list));
  p.el.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(v); });
  v.pins = p;
  v.settingsButton.before(p.button);
  v.thread.after(p.el);
  load(v);
}

// load reads the room's pins (a room not joined yet has none to show). A
// pin or unpin arriving meanwhile may be missing from the answer: then it
// reads them again.
async function load(v) {
  const p = v.pins;
  for (let tries = 0; tries < 3; tries++) {
    const changes = p.changes;
    let list;
    try {
      list = await api.pins(v.room);
    } catch (e) {
      if (!p.el.hidden) replace(p.list, h('li', {class: 'notice error'}, 'Cannot load the pinned messages: ' + e.message));
      return;
    }
    if (changes !== p.changes) continue;
    p.pins = new Map(list.map((m) => [m.seq, m]));
    break;
  }
  draw(v);
}

async function open(v) {
  const p = v.pins;
  only(v, p.el);
  p.el.hidden = false;
  p.button.setAttribute('aria-expanded', 'true');
  draw(v);
  await load(v);
  const first = p.list.querySelector('button');
  if (first) first.focus();
}

// close hides the panel of room view v, giving the focus back to its
// button unless refocus is false.
function close(v, refocus = true) {
  const p = v.pins;
  if (!p || p.el.hidden) return;
  p.el.hidden = true;
  p.button.setAttribute('aria-expanded', 'false');
  if (refocus) p.button.focus();
}

// changed keeps the list current as a message changes (a pin, an unpin, an
// edit or a delete of a pinned message).
export function changed(v, msg) {
  const p = v.pins;
  if (!p) return;
  p.changes++;
  if (msg.pinned && !msg.deleted) p.pins.set(msg.seq, msg);
  else if (!p.pins.delete(msg.seq)) return;
  draw(v);
}

// draw shows the count and, when the panel is open, the list (newest pin
// first, as the seq order of the pinned messages).
function draw(v) {
  const p = v.pins;
  p.count.textContent = p.pins.size ? String(p.pins.size) : '';
  if (p.el.hidden) return;
  const pins = [...p.pins.values()].sort((a, b) => b.seq - a.seq);
  replace(p.list, pins.length ? pins.map((m) => h('li', {class: 'pin-item', 'data-seq': String(m.seq)},
    h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, m.sender), h('time', {datetime: new Date(m.ts).toISOString()}, fmtTime(m.ts))),
    h('div', {class: 'text'}, render(m.text, v.me)),
    h('div', {class: 'pin-actions'},
      h('button', {type: 'button', class: 'link-button pin-jump', title: 'Show this message in the room', onclick: () => show(v, m.seq)}, 'Jump'),
      h('button', {type: 'button', class: 'link-button unpin', onclick: () => v.act.pin(m.seq, true)}, 'Unpin'))))
    : h('li', {class: 'muted empty'}, 'Nothing is pinned yet. Pin a message from its menu to keep it here.'));
}

// show opens a pinned message in context; on a phone, where the panel
// covers the room, the panel closes first.
async function show(v, seq) {
  if (matchMedia('(max-width: 720px)').matches) close(v, false);
  await jump.to(v, seq);
}

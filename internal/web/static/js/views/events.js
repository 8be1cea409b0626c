// views/events.js: how one room event looks in the room view: messages
// with the sender's avatar, name and time (a sender's messages close in
// time grouped under one header), whispers marked, join and leave notices.
// Hidden events (whispers between other members) take a seq but show
// nothing.

import {h, fmtTime} from '../dom.js';

// GROUP_MS is how soon after the same sender's previous message a message
// is shown under it without a header of its own, as chat apps do.
const GROUP_MS = 5 * 60 * 1000;

// eventElement returns the list item for ev as me sees it, or null for an
// event that shows nothing.
export function eventElement(ev, me) {
  const time = h('time', {datetime: new Date(ev.ts).toISOString(), title: new Date(ev.ts).toLocaleString()}, fmtTime(ev.ts));
  const attrs = (cls) => ({class: cls, 'data-seq': String(ev.seq), 'data-kind': ev.kind,
    'data-sender': (ev.sender || '').toLowerCase(), 'data-ts': String(ev.ts)});
  const mine = ev.sender && me && ev.sender.toLowerCase() === me.toLowerCase();
  switch (ev.kind) {
    case 'message':
      return h('li', attrs('msg' + (mine ? ' mine' : '')), avatar(ev.sender),
        h('div', {class: 'msg-body'},
          h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, ev.sender), time),
          h('div', {class: 'text'}, ev.text)));
    case 'whisper': {
      const you = (n) => (me && n.toLowerCase() === me.toLowerCase() ? 'you' : n);
      const label = 'whisper to ' + (ev.to || []).map(you).join(', ');
      return h('li', attrs('msg whisper' + (mine ? ' mine' : '')), avatar(ev.sender),
        h('div', {class: 'msg-body'},
          h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, ev.sender),
            h('span', {class: 'whisper-tag'}, label), time),
          h('div', {class: 'text'}, ev.text)));
    }
    case 'join':
      return h('li', attrs('notice'), `${ev.sender} joined · `, time);
    case 'leave':
      return h('li', attrs('notice'), `${ev.sender} left · `, time);
    default:
      return null; // hidden, or a kind this app does not know yet
  }
}

// avatar is the sender's initial on a colour picked from the name, so a
// sender looks the same to everyone.
function avatar(name) {
  let n = 0;
  for (const c of name.toLowerCase()) n = (n * 31 + c.codePointAt(0)) >>> 0;
  return h('span', {class: 'avatar av' + (n % 8), 'aria-hidden': 'true'}, [...name][0].toUpperCase());
}

// regroup marks el, a list item, as continuing the message before it when
// both are messages (not whispers) of one sender close in time.
export function regroup(el) {
  if (!el || el.dataset.kind !== 'message') return;
  const prev = el.previousElementSibling;
  el.classList.toggle('cont', !!prev && prev.dataset.kind === 'message' && prev.dataset.sender === el.dataset.sender &&
    Number(el.dataset.ts) - Number(prev.dataset.ts) < GROUP_MS);
}

// parseComposer splits what was typed into text and whisper recipients:
// "/w alice,bob hi" (or the chat command "WSP alice,bob hi") whispers "hi"
// to alice and bob; anything else is a message to the room. problem says
// what keeps it from being sent ('' when nothing does): a message of only
// spaces and new lines, or a whisper without names or text.
export function parseComposer(input) {
  const s = input.trim();
  const w = /^(?:\/w|wsp)(?:\s+([^\s]+))?(?:\s+([\s\S]*))?$/i.exec(s);
  if (!w) return {text: s, to: [], problem: s ? '' : 'Write something first: a message of only spaces is not sent.'};
  const to = (w[1] || '').split(',').map((x) => x.trim()).filter(Boolean);
  const text = (w[2] || '').trim();
  let problem = '';
  if (!to.length) problem = 'Name who to whisper to: /w alice,bob your text';
  else if (!text) problem = `Write the whisper after the names: /w ${to.join(',')} your text`;
  return {text, to, problem};
}

// views/events.js: how one room event looks in the room view: messages
// with sender and time, whispers marked, join and leave notices. Hidden
// events (whispers between other members) take a seq but show nothing.

import {h, fmtTime} from '../dom.js';

// eventElement returns the list item for ev as me sees it, or null for an
// event that shows nothing.
export function eventElement(ev, me) {
  const time = h('time', {datetime: new Date(ev.ts).toISOString(), title: new Date(ev.ts).toLocaleString()}, fmtTime(ev.ts));
  const attrs = (cls) => ({class: cls, 'data-seq': String(ev.seq), 'data-kind': ev.kind});
  const mine = ev.sender && me && ev.sender.toLowerCase() === me.toLowerCase();
  switch (ev.kind) {
    case 'message':
      return h('li', attrs('msg' + (mine ? ' mine' : '')),
        h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, ev.sender), time),
        h('div', {class: 'text'}, ev.text));
    case 'whisper': {
      const you = (n) => (me && n.toLowerCase() === me.toLowerCase() ? 'you' : n);
      const label = 'whisper to ' + (ev.to || []).map(you).join(', ');
      return h('li', attrs('msg whisper' + (mine ? ' mine' : '')),
        h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, ev.sender),
          h('span', {class: 'whisper-tag'}, label), time),
        h('div', {class: 'text'}, ev.text));
    }
    case 'join':
      return h('li', attrs('notice'), `${ev.sender} joined · `, time);
    case 'leave':
      return h('li', attrs('notice'), `${ev.sender} left · `, time);
    default:
      return null; // hidden, or a kind this app does not know yet
  }
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

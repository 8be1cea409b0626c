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
// to alice and bob; anything else is a message to the room.
export function parseComposer(input) {
  const m = /^(?:\/w|wsp)\s+([^\s]+)\s+([\s\S]+)$/i.exec(input.trim());
  if (!m) return {text: input.trim(), to: []};
  return {text: m[2].trim(), to: m[1].split(',').map((s) => s.trim()).filter(Boolean)};
}

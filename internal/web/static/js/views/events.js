// views/events.js: how one room event looks in the room view: messages
// with the sender's avatar, name and time (a sender's messages close in
// time grouped under one header), whispers marked, join and leave notices.
// Hidden events (whispers between other members) take a seq but show
// nothing.

import {h, fmtTime} from '../dom.js';
import {render} from '../markdown.js';
import {emojiFor} from './emoji.js';
import {reactIcon} from './icons.js';
import {pinIcon, editIcon, deleteIcon, replyIcon} from './icons.js';
import {attachments} from './files.js';

// QUICK are the reactions the hover menu offers: 👍 ❤️ 😂 🎉. Reactions
// are content, emoji by nature (as others' reactions arrive), unlike the
// app's own symbols, which are SVG icons (icons.js); they are escaped here
// because the source check (web_test.go) refuses literal symbols.
const QUICK = ['\u{1F44D}', '\u2764\uFE0F', '\u{1F602}', '\u{1F389}'];

// isChange reports whether ev is a change to another message (its own
// element shows nothing: the target is drawn again).
export const isChange = (ev) => ['edit', 'delete', 'react', 'unreact', 'pin', 'unpin'].includes(ev.kind);

// GROUP_MS is how soon after the same sender's previous message a message
// is shown under it without a header of its own, as chat apps do.
const GROUP_MS = 5 * 60 * 1000;

// eventElement returns the list item for ev as me sees it, or null for an
// event that shows nothing.
export function eventElement(ev, me, act) {
  const time = h('time', {datetime: new Date(ev.ts).toISOString(), title: new Date(ev.ts).toLocaleString()}, fmtTime(ev.ts));
  const attrs = (cls) => ({class: cls, 'data-seq': String(ev.seq), 'data-kind': ev.kind,
    'data-sender': (ev.sender || '').toLowerCase(), 'data-ts': String(ev.ts)});
  const mine = ev.sender && me && ev.sender.toLowerCase() === me.toLowerCase();
  switch (ev.kind) {
    case 'message':
    case 'whisper': {
      const you = (n) => (me && n.toLowerCase() === me.toLowerCase() ? 'you' : n);
      const tag = ev.kind === 'whisper' ? h('span', {class: 'whisper-tag'}, 'whisper to ' + (ev.to || []).map(you).join(', ')) : null;
      const cls = 'msg' + (ev.kind === 'whisper' ? ' whisper' : '') + (mine ? ' mine' : '') + (ev.deleted ? ' deleted' : '') +
        (mentionsMe(ev, me) ? ' mentions-me' : '');
      return h('li', attrs(cls), avatar(ev.sender),
        h('div', {class: 'msg-body'},
          h('div', {class: 'msg-head'}, senderName(ev.sender), tag, time,
            ev.pinned ? h('span', {class: 'pin-tag', title: 'Pinned'}, pinIcon()) : null),
          ev.reply_to ? h('div', {class: 'reply-tag'}, '↳ in a thread') : null,
          ev.deleted ? h('div', {class: 'text tombstone'}, 'This message was deleted.')
            : h('div', {class: 'text'}, render(ev.text, me), ev.edited_at ? h('span', {class: 'edited', title: 'Edited ' + new Date(ev.edited_at).toLocaleString()}, ' (edited)') : null),
          attachments(ev), // files.js
          reactions(ev, me, act),
          ev.reply_count ? h('button', {type: 'button', class: 'replies link-button', onclick: () => act && act.thread(ev.seq)},
            `${ev.reply_count} ${ev.reply_count === 1 ? 'reply' : 'replies'}`) : null),
        ev.deleted || !act ? null : menu(ev, mine, act));
    }
    case 'join':
      return h('li', attrs('notice'), `${ev.sender} joined · `, time);
    case 'leave':
      return h('li', attrs('notice'), `${ev.sender} left · `, time);
    case 'role': case 'invite': case 'uninvite': case 'kick': case 'ban': case 'unban': case 'mute': case 'unmute': case 'settings':
    case 'legal_hold': case 'legal_hold_lifted':
      return h('li', attrs('notice moderation'), moderationText(ev), ' · ', time);
    default:
      return null; // hidden, a change to another message, or a kind this app does not know yet
  }
}

// isModeration reports whether ev is a role, invitation, moderation or
// settings event.
export const isModeration = (ev) => ['role', 'invite', 'uninvite', 'kick', 'ban', 'unban', 'mute', 'unmute', 'settings',
  'legal_hold', 'legal_hold_lifted'].includes(ev.kind);

// moderationText says what a moderation event did, who did it and why, as
// plain text.
export function moderationText(ev) {
  const until = ev.until ? ' until ' + new Date(ev.until).toLocaleString() : '';
  const said = {
    role: () => ev.role === 'owner' ? `${ev.sender} made ${ev.user} the owner` : `${ev.sender} made ${ev.user} a ${ev.role}`,
    invite: () => `${ev.sender} invited ${ev.user}`,
    uninvite: () => `${ev.sender} withdrew the invitation of ${ev.user}`,
    kick: () => `${ev.sender} removed ${ev.user}`,
    ban: () => `${ev.sender} banned ${ev.user}` + (until || ' for good'),
    unban: () => `${ev.sender} lifted the ban of ${ev.user}`,
    mute: () => `${ev.sender} muted ${ev.user}` + until,
    unmute: () => `${ev.sender} lifted the mute of ${ev.user}`,
    settings: () => `${ev.sender} changed the ${(ev.changed || []).join(', ').replace(/_/g, ' ')}`,
    legal_hold: () => `${ev.sender} placed the room under legal hold`,
    legal_hold_lifted: () => `${ev.sender} lifted the room's legal hold`,
  }[ev.kind];
  return (said ? said() : ev.kind) + (ev.reason ? ': ' + ev.reason : '');
}

// senderName is a message's sender: a bot (an incoming webhook's post,
// sender "hook:NAME"; ':' is in no username) shows its NAME with a "bot"
// badge, so it cannot pass for the user of that name.
function senderName(sender) {
  if (sender && sender.startsWith('hook:')) {
    return h('span', {class: 'sender bot', title: 'Posted through an incoming webhook'}, sender.slice(5), h('span', {class: 'tag bot-tag'}, 'bot'));
  }
  return h('span', {class: 'sender'}, sender);
}

function mentionsMe(ev, me) {
  if (!me || ev.sender.toLowerCase() === me.toLowerCase()) return false;
  return ev.mention_room || (ev.mentions || []).some((n) => n.toLowerCase() === me.toLowerCase());
}

// reactions is the row of a message's reactions; clicking one adds mine
// or takes it back.
function reactions(ev, me, act) {
  if (!ev.reactions || !ev.reactions.length) return null;
  return h('div', {class: 'reactions'}, ev.reactions.map((r) => {
    const mineToo = me && r.users.some((u) => u.toLowerCase() === me.toLowerCase());
    return h('button', {type: 'button', class: 'reaction' + (mineToo ? ' mine' : ''), title: r.users.join(', '),
      'data-emoji': r.emoji, onclick: () => act && act.react(ev.seq, r.emoji, mineToo)}, h('span', {class: 'emoji-char'}, emojiFor(r.emoji)), ' ' + r.count);
  }));
}

// menu is the hover menu of a message: quick reactions, reply, and for my
// messages edit and delete; pin for messages to everyone.
function menu(ev, mine, act) {
  const b = (label, title, fn, cls) => h('button', {type: 'button', class: 'menu-btn' + (cls ? ' ' + cls : ''), title, 'aria-label': title, onclick: fn}, label);
  return h('div', {class: 'msg-menu'},
    QUICK.map((e) => b(e, 'React ' + e, () => act.react(ev.seq, e, false), 'quick')),
    b(reactIcon(), 'Add a reaction', (e) => act.pick(ev.seq, e.currentTarget), 'add-reaction'),
    b(replyIcon(), 'Reply in thread', () => act.thread(ev.reply_to || ev.seq), 'reply'),
    mine ? b(editIcon(), 'Edit', () => act.edit(ev), 'edit') : null,
    ev.kind === 'message' ? b(pinIcon(ev.pinned ? 'Unpin' : 'Pin'), ev.pinned ? 'Unpin' : 'Pin', () => act.pin(ev.seq, ev.pinned), 'pin') : null,
    mine || act.owner() ? b(deleteIcon(), 'Delete', () => act.remove(ev.seq), 'delete') : null);
}

// avatar is the sender's initials on a colour picked from the name, so a
// sender looks the same to everyone.
function avatar(name) {
  let n = 0;
  for (const c of name.toLowerCase()) n = (n * 31 + c.codePointAt(0)) >>> 0;
  const parts = name.split(/[._-]+/).filter(Boolean);
  const initials = (parts.length > 1 ? [...parts[0]][0] + [...parts[1]][0] : [...name][0]).toUpperCase();
  return h('span', {class: 'avatar av' + (n % 8), 'aria-hidden': 'true'}, initials);
}

// regroup marks el, a list item, as continuing the message before it when
// both are messages (not whispers) of one sender close in time the same
// day; and as the first event of its day in the list (data-day, shown above
// it as in Mattermost: "Today", "Yesterday" or the date).
export function regroup(el) {
  if (!el || !el.dataset.ts) return;
  let before = el.previousElementSibling;
  while (before && !before.dataset.ts) before = before.previousElementSibling; // the unread divider, the start notice
  const day = new Date(Number(el.dataset.ts)).toDateString();
  if (!before || new Date(Number(before.dataset.ts)).toDateString() !== day) el.dataset.day = dayLabel(Number(el.dataset.ts));
  else delete el.dataset.day;
  if (el.dataset.kind !== 'message') return;
  const prev = el.previousElementSibling;
  el.classList.toggle('cont', !!prev && prev.dataset.kind === 'message' && prev.dataset.sender === el.dataset.sender &&
    Number(el.dataset.ts) - Number(prev.dataset.ts) < GROUP_MS && !el.dataset.day);
}

// dayLabel names the day of a Unix ms time: Today, Yesterday, or its date.
function dayLabel(ms) {
  const d = new Date(ms);
  const today = new Date();
  const yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
  if (d.toDateString() === today.toDateString()) return 'Today';
  if (d.toDateString() === yesterday.toDateString()) return 'Yesterday';
  return d.toLocaleDateString([], {weekday: 'long', month: 'long', day: 'numeric',
    year: d.getFullYear() === today.getFullYear() ? undefined : 'numeric'});
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

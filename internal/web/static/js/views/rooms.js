// views/rooms.js: the rooms list (public rooms, private ones with a lock,
// unread counts for rooms I am in), the form to create a room and who is
// online in the cluster. The list refreshes every few seconds, and at once
// when someone mentions me.

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, fmtTime} from '../dom.js';
import {lockIcon} from './icons.js';

const REFRESH_MS = 5000;

export function roomsView(main, ctx) {
  const list = h('ul', {class: 'rooms', 'aria-label': 'Rooms'});
  const online = h('section', {class: 'card online', hidden: true}, h('h2', {}, 'Online now'), h('ul', {class: 'people'}));
  main.append(h('div', {class: 'split'},
    h('section', {class: 'card'}, h('h1', {}, 'Rooms'), searchForm(ctx), list, createForm(ctx), joinPrivateForm(ctx)),
    online));

  let timer = null;
  let stopped = false;
  let busy = false;
  const refresh = async () => {
    clearTimeout(timer);
    busy = true;
    try {
      renderRooms(list, await api.rooms(), ctx);
    } catch (e) {
      ctx.notify('Cannot load rooms: ' + e.message, 'error');
    }
    await refreshOnline(online);
    busy = false;
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  };
  refresh();
  const offMention = ctx.stream().on('mention', () => { if (!busy && !stopped) refresh(); }); // the badge at once
  return () => { stopped = true; clearTimeout(timer); offMention(); };
}

function renderRooms(list, rooms, ctx) {
  if (!rooms.length) {
    replace(list, h('li', {class: 'muted empty'}, 'No rooms yet. Create the first one below.'));
    return;
  }
  rooms.sort((a, b) => (b.member - a.member) || a.name.localeCompare(b.name));
  replace(list, rooms.map((r) => {
    const unread = r.member ? Math.max(0, r.last_seq - r.last_read) : 0;
    const row = h('li', {class: 'room-row' + (r.member ? ' member' : ''), 'data-room': r.name},
      h('button', {type: 'button', class: 'room-open', onclick: () => openRoom(r, row, ctx)},
        h('span', {class: 'room-name'}, r.private ? lockIcon() : h('span', {class: 'hash', 'aria-hidden': 'true'}, '#'), r.name),
        h('span', {class: 'room-meta'},
          `${r.members} member${r.members === 1 ? '' : 's'}`,
          r.online ? ` · ${r.online} online` : '',
          r.member ? '' : ' · not joined'),
        r.unread_mentions ? h('span', {class: 'badge mention-badge', title: `${r.unread_mentions} unread mention${r.unread_mentions === 1 ? '' : 's'}`}, '@' + r.unread_mentions) : null,
        unread ? h('span', {class: 'badge', title: `${unread} unread`}, String(unread)) : null));
    return row;
  }));
}

// openRoom enters a room, joining it first (asking for the password of a
// private room).
async function openRoom(r, row, ctx) {
  if (r.member) { ctx.go('#/room/' + encodeURIComponent(r.name)); return; }
  if (!r.private) {
    try {
      await api.joinRoom(r.name);
      ctx.go('#/room/' + encodeURIComponent(r.name));
    } catch (e) {
      ctx.notify(`Cannot join ${r.name}: ${e.message}`, 'error');
    }
    return;
  }
  if (row.querySelector('form')) return;
  const pw = field('Password', {type: 'password', autocomplete: 'off', required: true});
  const form = h('form', {class: 'inline-form'}, pw.el, h('button', {type: 'submit', class: 'primary'}, 'Join'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await api.joinRoom(r.name, pw.input.value);
      ctx.go('#/room/' + encodeURIComponent(r.name));
    } catch (err) {
      fieldError(pw.input, err.status === 403 ? 'Wrong password.' : err.message);
    }
  });
  row.append(form);
  pw.input.focus();
}

// searchForm searches the messages I may read (GET /api/v1/search) and
// lists the results, each opening its room at the message found.
function searchForm(ctx) {
  const q = field('Search messages', {type: 'search', name: 'q', maxlength: 512, autocomplete: 'off',
    placeholder: 'words, "a phrase", from:user, in:room'});
  const results = h('ul', {class: 'search-results', 'aria-label': 'Search results', hidden: true});
  const form = h('form', {class: 'search', role: 'search', novalidate: true},
    h('div', {class: 'inline-form'}, q.el, h('button', {type: 'submit'}, 'Search')), results);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    if (!q.input.value.trim()) { results.hidden = true; return; }
    try {
      const found = await api.search(q.input.value);
      results.hidden = false;
      replace(results, found.length ? found.map((r) => h('li', {},
        h('a', {href: `#/room/${encodeURIComponent(r.room)}/${r.message.seq}`},
          h('span', {class: 'room-name'}, '#' + r.room), ' ',
          h('span', {class: 'muted'}, `${r.message.sender} · ${fmtTime(r.message.ts)}`)),
        h('div', {class: 'search-text'}, ...highlighted(r)))) : h('li', {class: 'muted'}, 'No messages found.'));
    } catch (err) {
      formError(form, err.message);
    }
  });
  return form;
}

// highlighted turns a result's first highlight (HTML-escaped text with
// <mark></mark> around the words found) into text nodes and mark elements,
// never parsing it as HTML; the message text when there is none.
export function highlighted(r) {
  const hl = (r.highlights || [])[0];
  if (!hl) return [r.message.text || ''];
  const unescape = (s) => s.replace(/&(lt|gt|amp|#34|#39|quot);/g, (m, e) =>
    ({lt: '<', gt: '>', amp: '&', '#34': '"', '#39': "'", quot: '"'})[e]);
  return hl.split(/(<mark>.*?<\/mark>)/).filter(Boolean).map((part) => part.startsWith('<mark>')
    ? h('mark', {}, unescape(part.slice(6, -7)))
    : unescape(part));
}

// checkRoomName returns what is wrong with a room name, or ''.
export function checkRoomName(v) {
  if (!v) return 'Choose a name.';
  if (v.length > 64) return 'At most 64 characters.';
  if (!/^[A-Za-z0-9_.-]+$/.test(v)) return 'Only letters, digits, "_", "." and "-".';
  if (v === '.' || v === '..') return 'Pick a name other than "." or "..".';
  return '';
}

function createForm(ctx) {
  const name = field('Name', {name: 'room', required: true, autocapitalize: 'none', spellcheck: false});
  const priv = h('input', {type: 'checkbox', name: 'private'});
  const invite = h('input', {type: 'checkbox', name: 'invite-only'});
  const pw = field('Password', {type: 'password', name: 'room-password', autocomplete: 'new-password'});
  pw.el.hidden = true;
  const inviteLabel = h('label', {class: 'check', hidden: true}, invite, ' Invitation only, no password');
  const sync = () => { inviteLabel.hidden = !priv.checked; pw.el.hidden = !priv.checked || invite.checked; };
  priv.addEventListener('change', sync);
  invite.addEventListener('change', sync);
  const form = h('form', {class: 'create-room', novalidate: true},
    h('h2', {}, 'New room'), name.el,
    h('label', {class: 'check'}, priv, ' Private (members join with a password or an invitation)'), inviteLabel, pw.el,
    h('button', {type: 'submit', class: 'primary'}, 'Create room'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const bad = checkRoomName(name.input.value);
    fieldError(name.input, bad);
    if (bad) return;
    const inviteOnly = priv.checked && invite.checked;
    if (priv.checked && !inviteOnly && !pw.input.value) { fieldError(pw.input, 'A private room needs a password (or make it invitation only).'); return; }
    try {
      const room = await api.createRoom(inviteOnly ? {name: name.input.value, invite_only: true}
        : {name: name.input.value, private: priv.checked, password: priv.checked ? pw.input.value : undefined});
      ctx.go('#/room/' + encodeURIComponent(room.name));
    } catch (err) {
      if (err.status === 409) fieldError(name.input, 'A room with that name exists.');
      else formError(form, err.message);
    }
  });
  return form;
}

// joinPrivateForm joins a private room by name and password (none when
// invited): private rooms are listed only to their members.
function joinPrivateForm(ctx) {
  const name = field('Room', {name: 'join-room', required: true, autocapitalize: 'none', spellcheck: false});
  const pw = field('Password', {type: 'password', name: 'join-password', autocomplete: 'off', placeholder: 'none if invited'});
  const form = h('form', {class: 'join-private', novalidate: true}, h('h2', {}, 'Join a private room'),
    h('div', {class: 'inline-form'}, name.el, pw.el, h('button', {type: 'submit'}, 'Join')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const bad = checkRoomName(name.input.value);
    fieldError(name.input, bad);
    if (bad) return;
    try {
      const room = await api.joinRoom(name.input.value, pw.input.value);
      ctx.go('#/room/' + encodeURIComponent(room.name));
    } catch (err) {
      if (err.status === 403) fieldError(pw.input, pw.input.value ? 'Wrong password.' : err.message);
      else if (err.status === 404) fieldError(name.input, 'There is no such room.');
      else formError(form, err.message);
    }
  });
  return form;
}

// refreshOnline shows who is online in the cluster; the panel stays hidden
// when the node does not serve GET /api/v1/users/online.
async function refreshOnline(panel) {
  let users;
  try {
    const r = await api.onlineUsers();
    users = ((r && r.users) || []).map((u) => (typeof u === 'string' ? u : u.username)).sort();
  } catch (e) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  replace(panel.querySelector('ul'), users.length
    ? users.map((u) => h('li', {}, h('span', {class: 'dot on'}), u))
    : h('li', {class: 'muted'}, 'Nobody else right now.'));
}

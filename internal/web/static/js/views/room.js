// views/room.js: the room view of the message board: events in seq order
// with older history loaded on scroll, the members beside them with who is
// online, and the input at the bottom. Live events come from the shared
// stream; while the stream is not live (not deployed, or reconnecting) the
// view polls history every 2 s instead. Both feed one list keyed by seq, so
// an event is shown once whichever path brings it.

import * as api from '../api.js';
import {h, replace, formError} from '../dom.js';
import {eventElement, isChange, isModeration, parseComposer, regroup} from './events.js';
import * as jump from './jump.js';
import * as pins from './pins.js';
import * as finder from './roomsearch.js';
import {only} from './side.js';
import * as keys from './keys.js';
import {pickReaction} from './emoji.js';
import * as thread from './thread.js';
import {settingsPanel, memberActions, roleTag, showRules, canModerate} from './room_mod.js';
import * as files from './files.js';

const PAGE = 50;
const POLL_MS = 2000;
const MEMBERS_MS = 15000;

// roomView shows room roomName in main: its newest messages, or with
// jumpTo the message of that seq in context (jump.js).
export function roomView(main, ctx, roomName, jumpTo) {
  const room = roomName.toLowerCase();
  const me = ctx.user();
  const stream = ctx.stream();
  const v = {
    room, me, stream, ctx,
    seqs: new Map(), // seq -> element (null for events that show nothing)
    contiguous: 0, // every seq up to this one is in the list
    first: 0, // lowest seq loaded
    hasOlder: false,
    loadingOlder: false,
    stopped: false,
    timers: [],
    offs: [],
    markedRead: 0,
    events: new Map(), // seq -> the message as last drawn
    editing: null, // the message being edited
  };
  v.act = actions(v);
  v.view = {add: (evs) => addEvents(v, evs), latest: () => loadLatest(v), redraw: (m) => redraw(v, m), divider: () => unreadDivider(v)};
  buildLayout(v, main);
  pins.mount(v);
  finder.mount(v);
  keys.mount(v);
  start(v, jumpTo);
  return () => stop(v);
}

function buildLayout(v, main) {
  v.list = h('ol', {class: 'events', 'aria-live': 'polite'});
  v.older = h('button', {type: 'button', class: 'older link-button', hidden: true, onclick: () => loadOlder(v)}, 'Load older messages');
  v.scroller = h('div', {class: 'scroller'}, v.older, v.list);
  v.scroller.addEventListener('scroll', () => {
    v.stuck = nearBottom(v);
    if (v.scroller.scrollTop < 80) loadOlder(v);
    if (v.stuck && !v.detached) v.pill.hidden = true;
    if (v.detached && nearBottom(v)) jump.newer(v);
  });
  // The board shrinks when the members' row appears above it on a phone,
  // the composer grows or the on-screen keyboard opens: a reader at the
  // bottom stays there, so the newest message is never hidden under the
  // composer.
  v.stuck = true;
  v.resized = new ResizeObserver(() => { if (v.stuck) v.scroller.scrollTop = v.scroller.scrollHeight; });
  v.resized.observe(v.scroller);
  v.pill = h('button', {type: 'button', class: 'new-pill', hidden: true, onclick: () => (v.detached ? jump.latest(v) : scrollToEnd(v))}, 'New messages ↓');
  v.members = h('ul', {class: 'people'});
  v.mode = h('span', {class: 'mode'});
  v.input = h('textarea', {name: 'text', rows: 1, maxlength: 4096, required: true, enterkeyhint: 'send',
    placeholder: `Message #${v.room}`, 'aria-label': 'Message',
    title: 'Enter sends, Shift+Enter starts a new line; "/w alice,bob text" whispers to alice and bob (or click a member).'});
  v.typingLine = h('div', {class: 'typing-line', 'aria-live': 'polite'});
  v.editBar = h('div', {class: 'edit-bar', hidden: true});
  v.files = files.composer(v);
  v.form = h('form', {class: 'composer'}, v.files.tray, v.files.picker, v.files.button, v.input, h('button', {type: 'submit', class: 'primary'}, 'Send'));
  v.form.addEventListener('submit', (e) => { e.preventDefault(); send(v); });
  v.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(v); }
    if (e.key === 'Escape' && v.editing) { e.preventDefault(); stopEditing(v); }
    if (e.key === 'ArrowUp' && !v.input.value && !v.editing) { // edit my last message
      const last = [...v.events.values()].filter((m) => v.seqs.get(m.seq) && m.sender && m.sender.toLowerCase() === v.me.toLowerCase() && !m.deleted)
        .reduce((a, m) => (a && a.seq > m.seq ? a : m), null); // the newest shown: older pages load later
      if (last) { e.preventDefault(); startEditing(v, last); }
    }
  });
  v.input.addEventListener('input', () => {
    fit(v.input);
    const now = Date.now();
    if (v.input.value && !v.editing && now - (v.typedAt || 0) >= 1000) { v.typedAt = now; v.stream.typing(v.room); }
  });
  v.refit = () => fit(v.input); // the width, so the wrapping, changed
  window.addEventListener('resize', v.refit);
  const leave = h('button', {type: 'button', class: 'link-button', onclick: async () => {
    try { await api.leaveRoom(v.room); v.ctx.go('#/rooms'); } catch (e) { v.ctx.notify(e.message, 'error'); }
  }}, 'Leave');
  v.topic = h('span', {class: 'topic', hidden: true});
  v.rules = h('div', {class: 'room-rules', role: 'status', hidden: true});
  v.settings = settingsPanel(v);
  v.settingsButton = h('button', {type: 'button', class: 'link-button settings-button', hidden: true,
    onclick: () => { v.settings.fill(v.info || {}); v.settings.form.hidden = !v.settings.form.hidden; }}, 'Settings');
  main.append(h('div', {class: 'room'},
    h('div', {class: 'room-head'}, h('a', {href: '#/rooms', class: 'back', 'aria-label': 'Back to rooms'}, '←'),
      h('h1', {}, '#' + v.room), v.topic, v.mode, v.settingsButton, leave),
    h('div', {class: 'room-body'},
      h('div', {class: 'board'}, v.scroller, v.pill, v.settings.form),
      v.thread = thread.panel(v),
      h('aside', {class: 'members'}, h('h2', {}, 'Members'), v.members)),
    v.typingLine, v.editBar, v.rules, v.form));
  v.files.listen(main.lastElementChild); // drop on the room, paste in the input
}

// refreshInfo reads the room's settings and my role, and shows what they
// mean for me.
async function refreshInfo(v) {
  try {
    const [info, list] = await Promise.all([api.room(v.room), api.members(v.room)]);
    v.info = info;
    v.owner = info.owner;
    const me = list.find((m) => m.username.toLowerCase() === v.me.toLowerCase());
    v.role = me ? me.role : '';
    v.memberList = list;
    renderMembers(v);
    showRules(v);
  } catch (e) { /* keep what is shown */ }
}

async function start(v, jumpTo) {
  v.offs.push(v.stream.on('event', (ev) => { if (ev.room === v.room && !jump.held(v, ev)) addEvents(v, [ev]); }));
  v.offs.push(v.stream.on('presence', (f) => { if (!f.room || f.room === v.room) setOnline(v, f.username, f.online); }));
  v.offs.push(v.stream.on('error', (f) => { if (f.room === v.room) streamError(v, f); }));
  v.offs.push(v.stream.on('state', () => showMode(v)));
  v.offs.push(v.stream.on('typing', (f) => { if (f.room === v.room && f.username.toLowerCase() !== v.me.toLowerCase()) showTyping(v, f.username); }));
  v.offs.push(v.stream.on('mention', (f) => {
    if (f.room !== v.room) v.ctx.notify(`${f.sender} mentioned you in #${f.room}`, 'info');
  }));
  v.offs.push(v.stream.on('ready', (room) => { if (room === v.room) showMode(v); }));
  showMode(v);
  if (!(await loadLatest(v))) return;
  if (jumpTo) await jump.to(v, jumpTo);
  v.stream.subscribe(v.room, v.detached ? undefined : v.contiguous);
  poll(v);
  refreshInfo(v);
  v.timers.push(setInterval(() => refreshMembers(v), MEMBERS_MS));
  v.input.focus();
}

function stop(v) {
  v.stopped = true;
  v.resized.disconnect();
  window.removeEventListener('resize', v.refit);
  clearTimeout(v.readTimer);
  if (v.contiguous > v.markedRead) api.markRead(v.room, v.contiguous).catch(() => {}); // what was shown is read
  v.timers.forEach((t) => { clearInterval(t); clearTimeout(t); });
  v.offs.forEach((off) => off());
  v.stream.unsubscribe(v.room);
}

// live reports whether the stream delivers this room's events.
const live = (v) => v.stream.live(v.room);

function showMode(v) {
  const isLive = live(v);
  v.mode.textContent = isLive ? '● live' : '○ polling';
  v.mode.title = isLive ? 'Live updates over the stream' : 'The stream is not connected; checking for new messages every 2 s';
  v.mode.dataset.mode = isLive ? 'live' : 'polling';
}

// loadLatest shows the latest page, joining a public room first when the
// user is not a member yet. It reports whether the room could be shown.
async function loadLatest(v) {
  let page;
  try {
    page = await api.history(v.room, {limit: PAGE});
  } catch (e) {
    if (e.status !== 403) return fail(v, e);
    try {
      await api.joinRoom(v.room);
      page = await api.history(v.room, {limit: PAGE});
    } catch (e2) {
      const priv = e2.status === 403 && /password|invitation/.test(e2.message);
      return fail(v, priv ? new Error('This room is private: join it with its password or an invitation from the rooms list.') : e2);
    }
  }
  try {
    const sum = (await api.rooms()).find((r) => r.name === v.room);
    if (sum) { v.owner = sum.owner; v.lastRead = sum.last_read; }
  } catch (e) { /* no divider */ }
  v.seqs.clear();
  v.list.replaceChildren();
  v.contiguous = page.length ? page[page.length - 1].seq : 0;
  v.first = page.length ? page[0].seq : 0;
  v.hasOlder = page.length === PAGE && v.first > 1;
  addEvents(v, page);
  unreadDivider(v);
  scrollToEnd(v);
  await fillScreen(v);
  return true;
}

// unreadDivider marks where the messages I had not read begin.
function unreadDivider(v) {
  if (!v.lastRead) return;
  const first = [...v.list.children].find((el) => Number(el.dataset.seq) > v.lastRead && el.dataset.kind !== 'join' &&
    el.dataset.sender !== v.me.toLowerCase());
  if (first) first.before(h('li', {class: 'unread-divider', role: 'separator'}, 'New messages'));
}

function fail(v, e) {
  replace(v.list, h('li', {class: 'notice error'}, e.status === 404 ? 'There is no such room.' : e.message));
  v.form.hidden = true;
  return false;
}

// fillScreen loads older pages until the list can scroll, so scrolling up
// can ask for more.
async function fillScreen(v) {
  while (v.hasOlder && !v.stopped && v.scroller.scrollHeight <= v.scroller.clientHeight) {
    if (!(await loadOlder(v))) break;
  }
}

// loadOlder prepends the page before the lowest seq loaded, keeping the
// scroll position. It reports whether a page came.
async function loadOlder(v) {
  if (!v.hasOlder || v.loadingOlder) return false;
  v.loadingOlder = true;
  try {
    const page = await api.history(v.room, {before: v.first, limit: PAGE});
    const before = v.scroller.scrollHeight;
    if (page.length) v.first = page[0].seq;
    v.hasOlder = page.length === PAGE && v.first > 1;
    addEvents(v, page);
    v.scroller.scrollTop += v.scroller.scrollHeight - before;
    return page.length > 0;
  } catch (e) {
    v.ctx.notify('Cannot load older messages: ' + e.message, 'error');
    return false;
  } finally {
    v.loadingOlder = false;
    v.older.hidden = !v.hasOlder;
    if (!v.hasOlder && v.first <= 1 && !v.list.querySelector('.start')) {
      v.list.prepend(h('li', {class: 'notice start'}, 'This is the beginning of #' + v.room + '.'));
    }
  }
}

// poll reads events after the contiguous seq every 2 s while the stream is
// not live.
async function poll(v) {
  if (v.stopped) return;
  if (!live(v) && !v.detached) {
    try {
      addEvents(v, await api.history(v.room, {after: v.contiguous, limit: 200}));
    } catch (e) {
      if (e.status === 410) await reloadCompacted(v);
    }
  }
  if (!v.stopped) v.timers.push(setTimeout(() => poll(v), POLL_MS));
}

function streamError(v, f) {
  if (f.code === 'history_compacted') reloadCompacted(v);
  else v.ctx.notify(`#${v.room}: ${f.message || f.code}`, 'error');
}

// reloadCompacted starts over from the latest page when the events after
// the last seq seen were removed by retention.
async function reloadCompacted(v) {
  v.ctx.notify('Some messages expired before they could be shown; showing the latest.', 'info');
  if (await loadLatest(v)) v.stream.subscribe(v.room, v.contiguous);
}

// addEvents puts events in the list in seq order, each once.
function addEvents(v, events) {
  events = jump.fit(v, events);
  const stick = nearBottom(v);
  let grew = false;
  for (const ev of events) {
    if (v.seqs.has(ev.seq)) continue;
    if (isChange(ev)) {
      v.seqs.set(ev.seq, null);
      if (ev.seq > v.contiguous) grew = true;
      if (ev.current) redraw(v, ev.current);
      continue;
    }
    const el = eventElement(ev, v.me, v.act);
    v.seqs.set(ev.seq, el);
    if (el && (ev.kind === 'message' || ev.kind === 'whisper')) {
      v.events.set(ev.seq, ev);
      if (ev.reply_to) thread.added(v, ev);
      if (ev.current) redraw(v, ev.current); // a reply brings its thread's first message
    }
    if (ev.seq > v.contiguous) grew = true;
    if (ev.kind === 'join' || ev.kind === 'leave') refreshMembers(v);
    if (isModeration(ev) && ev.seq > v.contiguous) refreshInfo(v);
    if (el) insertBySeq(v.list, el, ev.seq);
  }
  while (v.seqs.has(v.contiguous + 1)) v.contiguous++;
  v.stream.seen(v.room, v.contiguous);
  if (!grew) return;
  if (stick && !v.detached) scrollToEnd(v); else v.pill.hidden = false;
  markRead(v);
}

// redraw shows a message as it is now (after an edit, a delete, a
// reaction, a pin or a reply), if it is in the list.
function redraw(v, msg) {
  const old = v.seqs.get(msg.seq);
  v.events.set(msg.seq, msg);
  thread.changed(v, msg);
  pins.changed(v, msg);
  if (!old) return;
  const el = eventElement(msg, v.me, v.act);
  const focused = old.contains(document.activeElement);
  old.replaceWith(el);
  if (focused) keys.focusMessage(el, {preventScroll: true}); // a keyboard user stays on the message
  v.seqs.set(msg.seq, el);
  regroup(el);
  regroup(el.nextElementSibling);
}

// actions are what a message's menu and reactions do.
function actions(v) {
  const run = async (what, fn) => {
    try { await fn(); } catch (e) { v.ctx.notify(`Cannot ${what}: ${e.message}`, 'error'); }
  };
  return {
    react: (seq, emoji, undo) => run('react', () => api.react(v.room, seq, emoji, undo)),
    pin: (seq, undo) => run(undo ? 'unpin' : 'pin', () => api.pin(v.room, seq, undo)),
    remove: (seq) => { if (confirm('Delete this message for everyone?')) run('delete', () => api.deleteMessage(v.room, seq)); },
    edit: (msg) => startEditing(v, msg),
    thread: (seq) => { only(v, v.thread); thread.open(v, seq); },
    pick: (seq, button) => pickReaction(button, (emoji) => api.react(v.room, seq, emoji, false)),
    owner: () => canModerate(v), // the owner and moderators delete any message
  };
}

function startEditing(v, msg) {
  v.editing = msg;
  replace(v.editBar, `Editing your message · Esc cancels`);
  v.editBar.hidden = false;
  v.input.value = msg.text;
  fit(v.input);
  v.input.focus();
}

function stopEditing(v) {
  v.editing = null;
  v.editBar.hidden = true;
  v.input.value = '';
  fit(v.input);
}

// showTyping shows who is typing for a few seconds after their last frame.
function showTyping(v, user) {
  v.typists = v.typists || new Map();
  v.typists.set(user, Date.now());
  const paint = () => {
    const now = Date.now();
    for (const [u, t] of v.typists) if (now - t > 3000) v.typists.delete(u);
    const names = [...v.typists.keys()];
    v.typingLine.textContent = names.length ? `${names.join(', ')} ${names.length === 1 ? 'is' : 'are'} typing…` : '';
  };
  paint();
  v.timers.push(setTimeout(paint, 3100));
}

function insertBySeq(list, el, seq) {
  let after = list.lastElementChild;
  while (after && after.dataset.seq && Number(after.dataset.seq) > seq) after = after.previousElementSibling;
  if (after) after.after(el); else list.prepend(el);
  regroup(el);
  regroup(el.nextElementSibling);
}

function nearBottom(v) {
  return v.scroller.scrollHeight - v.scroller.scrollTop - v.scroller.clientHeight < 60;
}

function scrollToEnd(v) {
  v.scroller.scrollTop = v.scroller.scrollHeight;
  v.stuck = true;
  v.pill.hidden = true;
}

// markRead moves the read marker to the contiguous seq, at most once a second.
function markRead(v) {
  if (v.readTimer || document.hidden) return;
  v.readTimer = setTimeout(async () => {
    v.readTimer = null;
    if (v.stopped || v.contiguous <= v.markedRead) return;
    const seq = v.contiguous;
    try { await api.markRead(v.room, seq); v.markedRead = seq; } catch (e) { /* next event retries */ }
  }, 1000);
}

// fit makes the composer as tall as what is typed, up to its CSS
// max-height, beyond which it scrolls; the text wraps, so a long paste
// never widens the page.
function fit(ta) {
  ta.style.height = 'auto';
  const cs = getComputedStyle(ta);
  ta.style.height = ta.scrollHeight + parseFloat(cs.borderTopWidth) + parseFloat(cs.borderBottomWidth) + 'px';
}

async function send(v) {
  if (v.editing) {
    const text = v.input.value.trim();
    if (!text) return;
    try {
      await api.edit(v.room, v.editing.seq, text);
      stopEditing(v);
    } catch (e) {
      formError(v.form, e.message);
    }
    return;
  }
  const {text, to, problem: typed} = parseComposer(v.input.value);
  const problem = v.files.count() && !text && !to.length ? '' : typed; // files need no text
  formError(v.form, problem);
  if (problem) { v.input.focus(); return; }
  v.input.disabled = true;
  try {
    const r = v.files.count() ? await v.files.post(text, to) : await api.post(v.room, text, to);
    v.input.value = '';
    fit(v.input);
    addEvents(v, [{room: v.room, seq: r.seq, ts: r.ts, sender: r.sender, kind: to.length ? 'whisper' : 'message', text, to, files: r.files}]);
    scrollToEnd(v);
  } catch (e) {
    formError(v.form, e.message);
  } finally {
    v.input.disabled = false;
    v.input.focus();
  }
}

async function refreshMembers(v) {
  if (v.membersBusy) return;
  v.membersBusy = true;
  try {
    v.memberList = await api.members(v.room);
    renderMembers(v);
  } catch (e) { /* keep the last list */ } finally {
    v.membersBusy = false;
  }
}

function setOnline(v, username, online) {
  const m = (v.memberList || []).find((x) => x.username.toLowerCase() === String(username).toLowerCase());
  if (m) { m.online = online; renderMembers(v); }
}

function renderMembers(v) {
  const list = [...v.memberList].sort((a, b) => (b.online - a.online) || a.username.localeCompare(b.username));
  replace(v.members, list.map((m) => h('li', {'data-member': m.username.toLowerCase()},
    h('button', {type: 'button', class: 'member', title: `Whisper to ${m.username}`, onclick: () => {
      v.input.value = `/w ${m.username} ` + parseComposer(v.input.value).text;
      fit(v.input);
      v.input.focus();
    }}, h('span', {class: 'dot' + (m.online ? ' on' : ''), 'aria-label': m.online ? 'online' : 'offline'}), m.username),
    roleTag(m), memberActions(v, m))));
}

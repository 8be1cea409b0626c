// views/roomsearch.js: the room view's search: a "Search" button in the
// room's header opens a side panel that searches this room's messages
// (GET /api/v1/search?room=) and lists the results, the words found
// marked; a result opens its message in context.

import * as api from '../api.js';
import {h, replace, fmtTime, formError} from '../dom.js';
import {searchIcon, closeIcon} from './icons.js';
import {highlighted} from './rooms.js';
import * as jump from './jump.js';
import {only} from './side.js';

// mount adds the button and the (hidden) panel to room view v.
export function mount(v) {
  const f = {};
  f.button = h('button', {type: 'button', class: 'link-button search-button', 'aria-expanded': 'false',
    'aria-controls': 'room-search', title: `Search #${v.room}`, onclick: () => (f.el.hidden ? open(v) : close(v))},
  searchIcon(`Search #${v.room}`), h('span', {class: 'pins-label'}, 'Search'));
  f.input = h('input', {type: 'search', name: 'room-q', maxlength: 512, autocomplete: 'off',
    placeholder: 'words, "a phrase", from:user', 'aria-label': `Search #${v.room}`});
  f.list = h('ol', {class: 'search-results room-search-results', 'aria-label': 'Search results'});
  f.form = h('form', {class: 'room-search-form', role: 'search'}, f.input, h('button', {type: 'submit'}, 'Search'));
  f.form.addEventListener('submit', (e) => { e.preventDefault(); find(v); });
  f.el = h('aside', {class: 'search-panel', id: 'room-search', hidden: true, 'aria-label': `Search #${v.room}`},
    h('div', {class: 'thread-head'}, h('h2', {}, 'Search'),
      h('button', {type: 'button', class: 'link-button close', 'aria-label': 'Close the search', onclick: () => close(v)},
        closeIcon('Close the search'))),
    f.form, h('div', {class: 'scroller'}, f.list));
  f.el.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(v); });
  v.finder = f;
  v.settingsButton.before(f.button);
  v.thread.after(f.el);
}

function open(v) {
  const f = v.finder;
  only(v, f.el);
  f.el.hidden = false;
  f.button.setAttribute('aria-expanded', 'true');
  f.input.focus();
}

function close(v, refocus = true) {
  const f = v.finder;
  f.el.hidden = true;
  f.button.setAttribute('aria-expanded', 'false');
  if (refocus) f.button.focus();
}

// find searches the room and lists what it found, best first.
async function find(v) {
  const f = v.finder;
  formError(f.form, '');
  const q = f.input.value.trim();
  if (!q) { replace(f.list); return; }
  try {
    const found = await api.search(q, v.room);
    replace(f.list, found.length ? found.map((r) => h('li', {'data-seq': String(r.message.seq)},
      h('button', {type: 'button', class: 'result-open', title: 'Show this message in the room', onclick: () => show(v, r.message.seq)},
        h('span', {class: 'muted'}, `${r.message.sender} · ${fmtTime(r.message.ts)}`),
        h('span', {class: 'search-text'}, ...highlighted(r)))))
      : h('li', {class: 'muted'}, 'No messages found.'));
  } catch (e) {
    formError(f.form, e.message);
  }
}

// show opens a result in context; on a phone, where the panel covers the
// room, the panel closes first.
async function show(v, seq) {
  if (matchMedia('(max-width: 720px)').matches) close(v, false);
  await jump.to(v, seq);
}

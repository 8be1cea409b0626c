// views/kv.js: the key-value page: keys listed by prefix a page at a time,
// one key's value shown (as text when it is UTF-8 text, else as its size
// and a hex dump; never as markup), and writes that cannot lose an update:
// saving is a compare-and-swap on the version shown, a change made
// meanwhile is shown beside the edit instead of overwritten, a new key is
// created only when it does not exist, and deleting asks first. A key's
// kept versions are listed on demand (History), and Watch live follows the
// prefix: changes appear as they happen (newest first), the list and an
// open key refresh by themselves, and the watch resumes from its last
// token after a cut, on whichever node answers.

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, clearErrors, fmtTime} from '../dom.js';

const PAGE = 20; // keys per page
const HEX_MAX = 256; // bytes of a binary value shown in hex

export function kvView(main, ctx) {
  const st = {ctx, prefix: '', afters: [''], page: 0, keys: [], more: false, open: null, seq: 0, watch: null, editing: false};
  st.table = h('div', {class: 'table-wrap kv-list'});
  st.prev = h('button', {type: 'button', class: 'kv-prev', onclick: () => { st.page--; list(st); }}, '← Previous');
  st.next = h('button', {type: 'button', class: 'kv-next', onclick: () => {
    st.afters[st.page + 1] = st.keys[st.keys.length - 1].key;
    st.page++;
    list(st);
  }}, 'Next →');
  st.range = h('span', {class: 'muted kv-range'});
  st.detail = h('section', {class: 'card kv-detail', 'aria-live': 'polite'}, placeholder());

  const prefix = field('Prefix', {name: 'prefix', placeholder: 'All keys', autocapitalize: 'none', spellcheck: false});
  const browse = h('form', {class: 'inline-form kv-browse', role: 'search'}, prefix.el, h('button', {type: 'submit'}, 'List'));
  const search = () => {
    st.prefix = prefix.input.value; st.afters = ['']; st.page = 0; list(st);
    if (st.watch) { stopWatch(st); startWatch(st); }
  };
  let typing = null;
  prefix.input.addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(search, 300); });
  browse.addEventListener('submit', (e) => { e.preventDefault(); clearTimeout(typing); search(); });

  main.append(h('div', {class: 'split kv-page'},
    h('section', {class: 'card'},
      h('div', {class: 'card-head'}, h('h1', {}, 'Key-value store'),
        h('div', {class: 'buttons'},
          h('button', {type: 'button', class: 'kv-watch', 'aria-pressed': 'false', onclick: () => toggleWatch(st)}, 'Watch live'),
          h('button', {type: 'button', class: 'primary kv-new', onclick: () => createForm(st)}, 'New key'))),
      browse, st.table, h('div', {class: 'kv-pager'}, st.prev, st.range, st.next),
      st.live = h('div', {class: 'kv-live', hidden: true, 'aria-live': 'polite'})),
    st.detail));
  list(st);
  return () => { clearTimeout(typing); st.seq++; stopWatch(st); };
}

// LIVE_MAX is how many changes the live feed shows.
const LIVE_MAX = 20;

// toggleWatch starts or stops following the prefix.
function toggleWatch(st) {
  const btn = document.querySelector('.kv-watch');
  if (st.watch) {
    stopWatch(st);
    st.live.hidden = true;
  } else {
    replace(st.live, h('h2', {}, 'Live changes'), h('ul', {class: 'kv-live-list'}));
    st.live.hidden = false;
    startWatch(st);
  }
  btn.setAttribute('aria-pressed', String(!!st.watch));
  btn.textContent = st.watch ? 'Stop watching' : 'Watch live';
}

function stopWatch(st) {
  if (st.watch) st.watch.abort.abort();
  st.watch = null;
}

// startWatch follows st.prefix until stopped, resuming from the last token
// after a cut and from now after history_compacted.
function startWatch(st) {
  const w = {abort: new AbortController(), token: '', relist: null};
  st.watch = w;
  const status = (text) => {
    let el = st.live.querySelector('.kv-live-status');
    if (!el) { el = h('p', {class: 'muted small kv-live-status'}); st.live.querySelector('h2').after(el); }
    el.textContent = text;
  };
  (async () => {
    for (let attempt = 0; st.watch === w; attempt++) {
      try {
        await api.kvWatch(st.prefix, w.token, w.abort.signal, (token) => {
          w.token = token;
          attempt = 0;
          status(`Watching ${st.prefix ? '“' + st.prefix + '”' : 'every key'}.`);
        }, (ch) => { w.token = ch.token; showChange(st, w, ch); });
      } catch (e) {
        if (st.watch !== w) return;
        if (e.code === 'history_compacted') { w.token = ''; status('Missed changes are no longer kept: watching from now.'); list(st); }
        else status(`Reconnecting: ${e.message}`);
      }
      await new Promise((r) => setTimeout(r, Math.min(5000, 300 * 2 ** Math.min(attempt, 4))));
    }
  })();
}

// showChange adds one revision's events to the live feed, lists the page
// again (once for a burst) and refreshes the open key unless it is being
// edited (the save's compare-and-swap then reports the change).
function showChange(st, w, ch) {
  const ul = st.live.querySelector('.kv-live-list');
  for (const e of ch.events) {
    const text = e.type === 'put' ? `${e.key} = ${preview(b64(e.value))}` : `${e.key} ${e.type === 'expire' ? 'expired' : 'deleted'}`;
    ul.prepend(h('li', {class: 'kv-live-item kv-live-' + e.type, 'data-key': e.key},
      h('span', {class: 'kv-live-rev muted'}, `${ch.partition}:${ch.revision}`), ' ', text));
    if (e.key === st.open && !st.editing) showKey(st, e.key);
  }
  while (ul.children.length > LIVE_MAX) ul.lastElementChild.remove();
  clearTimeout(w.relist);
  w.relist = setTimeout(() => list(st), 200);
}

// b64 decodes a base64 value (absent: empty).
function b64(s) {
  return s ? Uint8Array.from(atob(s), (c) => c.charCodeAt(0)) : new Uint8Array();
}

// preview is a value in a line: text (shortened) or its size.
function preview(bytes) {
  const text = asText(bytes);
  if (text === null) return `(${size(bytes.length)} binary)`;
  return text.length > 60 ? text.slice(0, 59) + '…' : text;
}

// showHistory lists key's kept versions in the detail panel; a put's row
// opens its value.
async function showHistory(st, key, item) {
  let hist;
  try {
    hist = await api.kvHistory(key);
  } catch (e) {
    st.ctx.notify(`Cannot read the history of ${key}: ${e.message}`, 'error');
    return;
  }
  if (st.open !== key) return;
  const shown = h('div', {class: 'kv-history-value'});
  const rows = hist.versions.slice().reverse().map((v) => h('tr', {class: 'kv-history-row', 'data-revision': String(v.revision)},
    h('td', {class: 'num'}, String(v.revision)),
    h('td', {}, v.type),
    h('td', {class: 'num'}, String(v.version)),
    h('td', {class: 'kv-when'}, fmtTime(v.modified_ms)),
    h('td', {}, v.type === 'put'
      ? h('button', {type: 'button', class: 'link-button', onclick: () => replace(shown,
        h('p', {class: 'muted small'}, `Version ${v.version}, revision ${v.revision}:`), valueView(b64(v.value), 'kv-old'))}, preview(b64(v.value)))
      : h('span', {class: 'muted'}, '—'))));
  replace(st.detail, h('h2', {class: 'kv-name'}, key),
    h('div', {class: 'kv-bar'},
      h('p', {class: 'muted kv-meta'}, `${hist.versions.length} kept versions, newest first`),
      h('div', {class: 'buttons'}, h('button', {type: 'button', class: 'kv-history-back', onclick: () => showKey(st, key, item)}, 'Back'))),
    h('div', {class: 'table-wrap'}, h('table', {class: 'kv-history'},
      h('thead', {}, h('tr', {}, h('th', {class: 'num'}, 'Revision'), h('th', {}, 'Change'), h('th', {class: 'num'}, 'Version'), h('th', {class: 'kv-when'}, 'When'), h('th', {}, 'Value'))),
      h('tbody', {}, rows))),
    shown);
}

// placeholder is the detail panel before a key is opened.
function placeholder() {
  return h('div', {class: 'kv-placeholder muted'}, h('p', {}, 'Open a key to see its value, edit it or delete it.'),
    h('p', {}, 'Every write is a compare-and-swap on the version you saw: nobody’s change is overwritten by accident.'));
}

// list shows the current page of keys under the prefix; an answer that
// comes after a newer request is dropped.
async function list(st) {
  const seq = ++st.seq;
  let keys;
  try {
    keys = await api.kvList(st.prefix, st.afters[st.page], PAGE + 1);
  } catch (e) {
    if (seq === st.seq) replace(st.table, h('p', {class: 'form-error'}, 'Cannot list the keys: ' + e.message));
    return;
  }
  if (seq !== st.seq) return;
  if (!keys.length && st.page > 0) { st.page--; list(st); return; } // the last key of the page went
  st.more = keys.length > PAGE;
  st.keys = keys.slice(0, PAGE);
  renderKeys(st);
}

function renderKeys(st) {
  st.prev.disabled = st.page === 0;
  st.next.disabled = !st.more;
  const first = st.page * PAGE + 1;
  st.range.textContent = st.keys.length ? `Keys ${first}–${first + st.keys.length - 1}` : '';
  if (!st.keys.length) {
    replace(st.table, h('p', {class: 'muted empty'}, st.prefix ? `No keys start with “${st.prefix}”.` : 'No keys yet: create one with New key.'));
    return;
  }
  replace(st.table, h('table', {class: 'kv-keys'},
    h('thead', {}, h('tr', {}, h('th', {}, 'Key'), h('th', {class: 'num'}, 'Version'), h('th', {class: 'num'}, 'Size'), h('th', {class: 'kv-when'}, 'Changed'))),
    h('tbody', {}, st.keys.map((k) => h('tr', {'data-key': k.key, class: k.key === st.open ? 'open' : null},
      h('td', {class: 'kv-key'}, h('button', {type: 'button', class: 'link-button', onclick: () => showKey(st, k.key, k)}, k.key)),
      h('td', {class: 'num'}, String(k.version)),
      h('td', {class: 'num'}, size(k.size)),
      h('td', {class: 'kv-when'}, fmtTime(k.modified_ms)))))));
}

// size says n bytes for people.
function size(n) {
  if (n < 1024) return n === 1 ? '1 byte' : `${n} bytes`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

// asText returns bytes as a string when they are UTF-8 text without
// control characters (tabs and new lines aside), else null.
function asText(bytes) {
  let s;
  try { s = new TextDecoder('utf-8', {fatal: true}).decode(bytes); } catch (e) { return null; }
  return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s) ? null : s;
}

// hexDump shows the first HEX_MAX bytes as lines of offset, hex and ASCII,
// eight bytes a line so that it fits a phone.
function hexDump(bytes) {
  const lines = [];
  for (let off = 0; off < Math.min(bytes.length, HEX_MAX); off += 8) {
    const row = Array.from(bytes.subarray(off, Math.min(off + 8, HEX_MAX)));
    const hex = row.map((b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = row.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(4, '0')}  ${hex.padEnd(23)}  ${ascii}`);
  }
  return lines.join('\n');
}

// load reads key with its version; hint is its list row, whose version
// stands in when the answer's headers are hidden (null when it is gone).
async function load(key, hint) {
  let r;
  try {
    r = await api.kvGet(key);
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
  if (r.version === null && hint) r = {...r, version: hint.version, modified: hint.modified_ms};
  if (r.version === null) {
    const [k] = await api.kvList(key, '', 1);
    if (k && k.key === key) r = {...r, version: k.version, modified: k.modified_ms};
  }
  return r;
}

// showKey opens key in the detail panel.
async function showKey(st, key, hint) {
  st.open = key;
  renderKeys(st);
  let item;
  try {
    item = await load(key, hint);
  } catch (e) {
    st.ctx.notify(`Cannot read ${key}: ${e.message}`, 'error');
    return;
  }
  if (st.open !== key) return; // another key was opened meanwhile
  renderItem(st, key, item);
  if (matchMedia('(max-width: 720px)').matches) st.detail.scrollIntoView({block: 'start'});
}

// valueView shows a value: text in a <pre> (as text, never markup), or a
// binary value's size and hex.
function valueView(bytes, cls = 'kv-value') {
  const text = asText(bytes);
  if (text === '') return h('p', {class: 'muted kv-empty'}, 'The value is empty.');
  if (text !== null) return h('pre', {class: cls}, text);
  return h('div', {class: 'kv-binary'},
    h('p', {class: 'muted'}, `Binary value: ${size(bytes.length)}, not shown as text` +
      (bytes.length > HEX_MAX ? `; the first ${HEX_MAX} bytes in hex:` : '; in hex:')),
    h('pre', {class: 'kv-hex'}, hexDump(bytes)));
}

function renderItem(st, key, item) {
  if (!item) {
    replace(st.detail, h('h2', {}, key), h('p', {class: 'muted'}, 'This key does not exist (any more).'));
    return;
  }
  const binary = asText(item.bytes) === null;
  const body = h('div', {class: 'kv-body'}, valueView(item.bytes));
  st.editing = false;
  const actions = h('div', {class: 'buttons'},
    h('button', {type: 'button', class: 'kv-edit', onclick: () => editor(st, key, item, body, binary)}, binary ? 'Replace with text' : 'Edit'),
    h('button', {type: 'button', class: 'kv-history-btn', onclick: () => showHistory(st, key, item)}, 'History'),
    h('button', {type: 'button', class: 'kv-delete danger-outline', onclick: () => confirmDelete(st, key, item, actions)}, 'Delete'));
  replace(st.detail, h('h2', {class: 'kv-name'}, key),
    h('div', {class: 'kv-bar'},
      h('p', {class: 'muted kv-meta'}, `version ${item.version} · ${size(item.bytes.length)}` + (item.modified ? ` · changed ${fmtTime(item.modified)}` : '')),
      actions),
    body);
}

// editor replaces the value with a form that saves over item's version.
function editor(st, key, item, body, binary) {
  const text = binary ? '' : asText(item.bytes);
  const rows = Math.min(16, Math.max(3, text.split('\n').length + 1));
  const value = h('textarea', {class: 'kv-editor', name: 'value', rows, 'aria-label': 'Value', spellcheck: false}, text);
  st.detail.querySelector('.kv-edit').disabled = true;
  st.editing = true;
  const conflict = h('div', {class: 'kv-conflict-slot'});
  const form = h('form', {class: 'kv-edit-form stack'}, value, conflict,
    h('div', {class: 'buttons'}, h('button', {type: 'submit', class: 'primary kv-save'}, 'Save'),
      h('button', {type: 'button', class: 'kv-cancel-edit', onclick: () => renderItem(st, key, item)}, 'Cancel')),
    h('p', {class: 'muted small'}, binary ? 'Saving replaces the binary value with this text. ' : '',
      `Saved only over version ${item.version}: a change made meanwhile is shown, not overwritten.`));
  let over = item.version;
  let busy = false; // a second click while saving would only meet a conflict
  const save = async () => {
    if (busy) return;
    busy = true;
    formError(form, '');
    try {
      const version = await api.kvPut(key, value.value, over);
      afterWrite(st, key);
      renderItem(st, key, {bytes: new TextEncoder().encode(value.value), version, modified: Date.now()});
    } catch (e) {
      if (e.status !== 412) { formError(form, e.message); return; }
      const now = await load(key).catch(() => undefined);
      if (now === undefined) { formError(form, 'Not saved: the key changed meanwhile, and reading it failed.'); return; }
      over = now ? now.version : 0;
      showConflict(conflict, key, now, save, () => renderItem(st, key, now));
      conflict.scrollIntoView({block: 'nearest'});
    } finally {
      busy = false;
    }
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); save(); });
  replace(body, form);
  value.focus();
}

// showConflict says the key changed (or went) since it was opened, shows
// what it holds now, and offers to overwrite it or drop the edit.
function showConflict(slot, key, now, overwrite, discard) {
  replace(slot, h('div', {class: 'kv-conflict', role: 'alert'},
    h('strong', {}, now ? `Not saved: “${key}” changed while you were editing. It is now version ${now.version}:`
      : `Not saved: “${key}” was deleted while you were editing.`),
    now ? valueView(now.bytes, 'kv-theirs') : null,
    h('p', {}, 'Your text is kept in the editor.'),
    h('div', {class: 'buttons'},
      h('button', {type: 'button', class: 'kv-overwrite danger', onclick: overwrite}, now ? `Overwrite version ${now.version} with mine` : 'Create it again with mine'),
      h('button', {type: 'button', class: 'kv-discard', onclick: discard}, 'Discard mine'))));
}

// confirmDelete asks before deleting item's version of key.
function confirmDelete(st, key, item, actions) {
  if (st.detail.querySelector('.kv-confirm')) return;
  const cancel = h('button', {type: 'button', class: 'kv-cancel', onclick: () => box.remove()}, 'Cancel');
  const box = h('div', {class: 'kv-confirm', role: 'alertdialog', 'aria-label': 'Confirm delete'},
    h('p', {}, `Delete “${key}”? It is gone for everyone, and this cannot be undone.`),
    h('div', {class: 'buttons'}, h('button', {type: 'button', class: 'danger kv-confirm-delete', onclick: async () => {
      try {
        await api.kvDelete(key, item.version);
      } catch (e) {
        if (e.status === 412) {
          st.ctx.notify(`Not deleted: “${key}” changed since you opened it. Here it is again.`, 'error');
          showKey(st, key);
          return;
        }
        if (e.status !== 404) { st.ctx.notify(`Cannot delete ${key}: ${e.message}`, 'error'); return; }
      }
      st.ctx.notify(`Deleted “${key}”.`);
      afterWrite(st, key);
      renderItem(st, key, null);
    }}, 'Delete'), cancel));
  box.addEventListener('keydown', (e) => { if (e.key === 'Escape') box.remove(); });
  actions.parentElement.after(box); // under the bar with the buttons
  cancel.focus();
}

// afterWrite lists the page again and marks key as the one open.
function afterWrite(st, key) {
  st.open = key;
  list(st);
}

// createForm opens the form for a new key, created only if it does not
// exist yet.
function createForm(st) {
  st.open = null;
  renderKeys(st);
  const key = field('Key', {name: 'key', required: true, autocapitalize: 'none', spellcheck: false, value: st.prefix});
  const value = field('Value', {name: 'value', rows: 8, spellcheck: false}, 'textarea');
  const form = h('form', {class: 'kv-create', novalidate: true}, h('h2', {}, 'New key'), key.el, value.el,
    h('div', {class: 'buttons'}, h('button', {type: 'submit', class: 'primary'}, 'Create'),
      h('button', {type: 'button', onclick: () => replace(st.detail, placeholder())}, 'Cancel')),
    h('p', {class: 'muted small'}, 'Created only if no key of that name exists: an existing value is never overwritten from here.'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const k = key.input.value;
    const bad = !k ? 'Choose a key.' : new TextEncoder().encode(k).length > 1024 ? 'At most 1024 bytes.' : '';
    fieldError(key.input, bad);
    if (bad) return;
    try {
      const version = await api.kvPut(k, value.input.value, 0);
      clearErrors(form);
      afterWrite(st, k);
      renderItem(st, k, {bytes: new TextEncoder().encode(value.input.value), version, modified: Date.now()});
    } catch (err) {
      if (err.status === 412) fieldError(key.input, 'That key exists already: open it from the list to edit it.');
      else if (err.status === 413) fieldError(value.input, err.message);
      else formError(form, err.message);
    }
  });
  replace(st.detail, form);
  key.input.focus();
}

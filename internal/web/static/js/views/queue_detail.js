// views/queue_detail.js: one queue on the queues page: sending (with
// priority, delay and FIFO group), peeking and receiving (leased messages
// can be acked, nacked, dead-lettered or extended), the queue's stats, a
// browser of its messages that shows where dead letters came from and why,
// redrive and purge, and its settings.

import * as api from '../api.js';
import {h, replace, field, formError, clearErrors, fmtTime} from '../dom.js';

const enc = encodeURIComponent;
const qpath = (q, suffix = '') => `/api/v1/queues/${enc(q)}${suffix}`;
const write = (method, q, suffix, body) => api.request(method, qpath(q, suffix), {body, idem: api.requestId()});

// queueDetail fills detail with the view of queue; refresh reloads the
// list of queues.
export function queueDetail(detail, queue, ctx, refresh) {
  const out = h('div', {class: 'queue-out'});
  const stats = h('div', {class: 'queue-stats'});
  const browser = h('div', {class: 'queue-browse table-wrap'});
  const admin = h('div', {class: 'stack queue-admin'});
  // reload refreshes the stats and the messages, and with full the
  // settings form too (not on the timer: it would wipe what is being typed).
  const reload = async (full) => {
    let q;
    try {
      q = await api.request('GET', qpath(queue));
    } catch (e) {
      replace(stats, h('p', {class: 'form-error'}, 'Cannot load the queue: ' + e.message));
      return;
    }
    renderStats(stats, q);
    const owner = q.creator.toLowerCase() === (ctx.user() || '').toLowerCase();
    if (full) replace(admin, owner ? [settingsForm(queue, q, () => reload(true)), adminButtons(queue, out, reload)] : []);
    try {
      renderBrowse(browser, (await api.request('GET', qpath(queue, '/messages') + '?limit=100')).messages);
    } catch (e) {
      replace(browser, h('p', {class: 'form-error'}, 'Cannot list messages: ' + e.message));
    }
  };
  const changed = () => { reload(); refresh(); };
  replace(detail, h('h2', {}, queue), sendForm(queue, out, changed), readSection(queue, out, changed), out,
    h('h3', {}, 'Stats'), stats,
    h('h3', {}, 'Messages'), h('p', {class: 'muted'}, 'Waiting, leased and delayed messages, and dead letters with where they came from and why.'), browser,
    admin);
  detail.hidden = false;
  reload(true);
  return () => reload(false);
}

function sendForm(queue, out, changed) {
  const body = h('textarea', {rows: 3, required: true, 'aria-label': 'Message body'});
  const to = field('To (optional: one receiver)', {autocapitalize: 'none', spellcheck: false});
  const priority = h('select', {name: 'priority'}, [...Array(10).keys()].map((p) => h('option', {value: String(p)}, String(p))));
  const delay = field('Delay (ms)', {name: 'delay', type: 'number', min: '0', inputmode: 'numeric'});
  const group = field('FIFO group', {name: 'group', autocapitalize: 'none', spellcheck: false});
  const form = h('form', {class: 'stack send-form'}, h('h3', {}, 'Send'), body, to.el,
    h('div', {class: 'inline-fields'}, h('label', {class: 'field'}, h('span', {class: 'label'}, 'Priority'), priority), delay.el, group.el),
    h('button', {type: 'submit', class: 'primary'}, 'Send'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const msg = {body: body.value};
    if (to.input.value.trim()) msg.to = to.input.value.trim();
    if (priority.value !== '0') msg.priority = Number(priority.value);
    if (delay.input.value) msg.delay_ms = Number(delay.input.value);
    if (group.input.value.trim()) msg.group = group.input.value.trim();
    try {
      const r = await write('POST', queue, '/messages', msg);
      clearErrors(form);
      body.value = '';
      replace(out, h('p', {class: 'muted'}, `Sent message ${r.id}.`));
      changed();
    } catch (err) { formError(form, err.message); }
  });
  return form;
}

function readSection(queue, out, changed) {
  const from = field('From (optional: one sender)', {autocapitalize: 'none', spellcheck: false});
  const lease = h('input', {type: 'checkbox', name: 'lease'});
  const take = async (fn) => {
    try {
      const m = await fn();
      replace(out, m ? messageCard(queue, m, out, changed) : h('p', {class: 'muted'}, 'No message for you.'));
      changed();
    } catch (err) { replace(out, h('p', {class: 'form-error'}, err.message)); }
  };
  const fromValue = () => from.input.value.trim();
  const receive = () => {
    const body = {};
    if (fromValue()) body.from = fromValue();
    if (lease.checked) body.ack_timeout_ms = 30000;
    return write('POST', queue, '/receive', body);
  };
  return h('div', {class: 'stack'}, h('h3', {}, 'Read'), from.el,
    h('label', {class: 'check'}, lease, ' Lease for 30 s (then ack, nack or extend)'),
    h('div', {class: 'buttons'},
      h('button', {type: 'button', onclick: () => take(() => api.peek(queue, fromValue()))}, 'Peek'),
      h('button', {type: 'button', class: 'primary', onclick: () => take(receive)}, 'Receive')));
}

// messageCard shows a message; a leased one gets its ack, nack, dead and
// extend buttons.
function messageCard(queue, m, out, changed) {
  const card = h('div', {class: 'queue-msg'},
    h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, m.sender), m.to ? h('span', {class: 'whisper-tag'}, 'to ' + m.to) : '',
      h('time', {}, fmtTime(m.ts)), h('span', {class: 'muted'}, ` #${m.id}, delivery ${m.deliveries}`),
      m.priority ? h('span', {class: 'muted'}, ` priority ${m.priority}`) : '', m.group ? h('span', {class: 'muted'}, ` group ${m.group}`) : ''),
    h('pre', {class: 'text'}, m.body));
  if (!m.receipt) return card;
  const note = h('p', {class: 'muted'}, `Leased until ${fmtTime(m.lease_expires_at)}.`);
  const settle = (label, suffix, body, done) => h('button', {type: 'button', onclick: async () => {
    try {
      const r = await write('POST', queue, suffix, {receipt: m.receipt, ...body});
      replace(note, done(r));
      changed();
    } catch (err) { replace(note, h('span', {class: 'form-error'}, err.message)); }
  }}, label);
  card.append(note, h('div', {class: 'buttons settle'},
    settle('Ack', '/ack', {}, () => 'Acknowledged.'),
    settle('Nack', '/nack', {}, () => 'Given back to the queue.'),
    settle('Dead-letter', '/nack', {dead: true, reason: 'rejected in the web app'}, () => 'Sent to the dead letters.'),
    settle('Extend 30 s', '/extend', {ack_timeout_ms: 30000}, (r) => `Leased until ${fmtTime(r.lease_expires_at)}.`)));
  return card;
}

const statNames = [['ready', 'Ready'], ['leased', 'Leased'], ['delayed', 'Delayed'], ['waiting', 'Waiting in a group'],
  ['dead_letters', 'Dead letters held'], ['dead_lettered', 'Dead-lettered'], ['dropped', 'Dropped'], ['expired', 'Expired'], ['moving', 'Moving']];

function renderStats(el, q) {
  const s = q.stats;
  const age = s.oldest_at ? Math.max(0, Math.round((Date.now() - s.oldest_at) / 1000)) + ' s' : '–';
  replace(el, h('dl', {class: 'stats'},
    statNames.map(([k, label]) => [h('dt', {}, label), h('dd', {'data-stat': k}, String(s[k]))]),
    h('dt', {}, 'Oldest message age'), h('dd', {'data-stat': 'oldest_age'}, age)),
  h('p', {class: 'muted'}, `Max deliveries ${q.max_deliveries || 'unlimited'}; dead letters go to ${q.dead_letter || 'nowhere (dropped)'}` +
    `; TTL ${q.ttl_ms ? q.ttl_ms + ' ms' : 'none'}; max length ${q.max_length || 'unlimited'} (${q.overflow}).`));
}

function renderBrowse(el, msgs) {
  if (!msgs.length) {
    replace(el, h('p', {class: 'muted'}, 'No messages.'));
    return;
  }
  replace(el, h('table', {},
    h('thead', {}, h('tr', {}, ['#', 'State', 'From', 'Priority', 'Deliveries', 'Dead letter of', 'Why', 'Body'].map((t) => h('th', {}, t)))),
    h('tbody', {}, msgs.map((m) => h('tr', {'data-message': String(m.id)},
      h('td', {class: 'num'}, String(m.id)), h('td', {}, m.state || ''), h('td', {}, m.sender),
      h('td', {class: 'num'}, String(m.priority || 0)), h('td', {class: 'num'}, String(m.deliveries)),
      h('td', {class: 'origin'}, m.origin || ''),
      h('td', {class: 'reason'}, [m.dead_reason, m.last_reason].filter(Boolean).join(': ')),
      h('td', {class: 'body'}, m.body.length > 80 ? m.body.slice(0, 80) + '…' : m.body))))));
}

function adminButtons(queue, out, reload) {
  const act = (label, cls, ask, fn) => h('button', {type: 'button', class: cls, onclick: async () => {
    if (ask && !confirm(ask)) return;
    try { replace(out, h('p', {class: 'muted'}, await fn())); reload(); } catch (e) { replace(out, h('p', {class: 'form-error'}, e.message)); }
  }}, label);
  return h('div', {class: 'buttons'},
    act('Redrive dead letters', 'redrive', '', async () => {
      const r = await write('POST', queue, '/redrive', {max: 1000});
      return `Moved ${r.moved} dead letters back to their queues` + (r.more ? '; more remain.' : '.');
    }),
    act('Purge', 'danger', `Remove every message of ${queue}, leased ones included?`, async () => {
      const r = await write('POST', queue, '/purge', {});
      return `Purged ${r.purged} messages.`;
    }));
}

function settingsForm(queue, q, reload) {
  const num = (label, name, v) => field(label, {name, type: 'number', min: '0', inputmode: 'numeric', value: String(v || 0)});
  const maxDel = num('Max deliveries (0: unlimited)', 'max_deliveries', q.max_deliveries);
  const dl = field('Dead-letter queue', {name: 'dead_letter', value: q.dead_letter || '', autocapitalize: 'none', spellcheck: false});
  const ttl = num('TTL ms (0: none)', 'ttl_ms', q.ttl_ms);
  const maxLen = num('Max length (0: unlimited)', 'max_length', q.max_length);
  const overflow = h('select', {name: 'overflow', 'aria-label': 'Overflow'},
    h('option', {value: 'reject', selected: q.overflow === 'reject'}, 'reject sends when full'),
    h('option', {value: 'drop_oldest', selected: q.overflow === 'drop_oldest'}, 'drop the oldest when full'));
  const form = h('form', {class: 'stack settings-form'}, h('h3', {}, 'Settings'), maxDel.el, dl.el, ttl.el, maxLen.el, overflow,
    h('button', {type: 'submit'}, 'Save settings'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    try {
      await api.request('PATCH', qpath(queue), {idem: api.requestId(), body: {
        max_deliveries: Number(maxDel.input.value), dead_letter: dl.input.value.trim(), ttl_ms: Number(ttl.input.value),
        max_length: Number(maxLen.input.value), overflow: overflow.value,
      }});
      clearErrors(form);
      reload();
    } catch (err) { formError(form, err.message); }
  });
  return form;
}

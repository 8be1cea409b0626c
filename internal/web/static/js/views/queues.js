// views/queues.js: the queues page: every queue with its waiting and
// in-flight counts (or only those with messages waiting for me), creating
// and deleting queues, and sending, peeking at and receiving messages.

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, clearErrors, fmtTime} from '../dom.js';
import {checkRoomName} from './rooms.js';

export function queuesView(main, ctx) {
  const waiting = h('input', {type: 'checkbox'});
  const table = h('div', {class: 'table-wrap'});
  const detail = h('section', {class: 'card queue-detail', hidden: true});
  const refresh = async () => {
    try {
      renderQueues(table, await api.queues(waiting.checked), ctx, detail, refresh);
    } catch (e) {
      replace(table, h('p', {class: 'form-error'}, 'Cannot load queues: ' + e.message));
    }
  };
  waiting.addEventListener('change', refresh);
  main.append(h('div', {class: 'split'},
    h('section', {class: 'card'}, h('h1', {}, 'Queues'),
      h('label', {class: 'check'}, waiting, ' Only queues with messages waiting for me'),
      table, createForm(refresh)),
    detail));
  refresh();
  const timer = setInterval(refresh, 5000);
  return () => clearInterval(timer);
}

function renderQueues(table, queues, ctx, detail, refresh) {
  if (!queues.length) {
    replace(table, h('p', {class: 'muted'}, 'No queues here yet.'));
    return;
  }
  const me = (ctx.user() || '').toLowerCase();
  replace(table, h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {class: 'num'}, 'Waiting'), h('th', {class: 'num'}, 'In flight'), h('th', {}, 'Creator'), h('th', {}, ''))),
    h('tbody', {}, queues.map((q) => h('tr', {'data-queue': q.name},
      h('td', {}, h('button', {type: 'button', class: 'link-button', onclick: () => openQueue(detail, q.name, refresh)}, q.name)),
      h('td', {class: 'num'}, String(q.messages)),
      h('td', {class: 'num'}, String(q.in_flight)),
      h('td', {}, q.creator),
      h('td', {}, q.creator.toLowerCase() === me ? h('button', {type: 'button', class: 'link-button danger', onclick: async () => {
        if (!confirm(`Delete queue ${q.name} and all its messages?`)) return;
        try { await api.deleteQueue(q.name); refresh(); } catch (e) { ctx.notify(e.message, 'error'); }
      }}, 'Delete') : ''))))));
}

function createForm(refresh) {
  const name = field('New queue', {required: true, autocapitalize: 'none', spellcheck: false});
  const form = h('form', {class: 'inline-form', novalidate: true}, name.el, h('button', {type: 'submit', class: 'primary'}, 'Create'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const bad = checkRoomName(name.input.value);
    fieldError(name.input, bad);
    if (bad) return;
    try {
      await api.createQueue(name.input.value);
      clearErrors(form);
      name.input.value = '';
      refresh();
    } catch (err) {
      fieldError(name.input, err.status === 409 ? 'A queue with that name exists.' : err.message);
    }
  });
  return form;
}

// openQueue shows the send, peek and receive forms of one queue.
function openQueue(detail, queue, refresh) {
  const body = h('textarea', {rows: 3, required: true, 'aria-label': 'Message body'});
  const to = field('To (optional: one receiver)', {autocapitalize: 'none', spellcheck: false});
  const from = field('From (optional: one sender)', {autocapitalize: 'none', spellcheck: false});
  const out = h('div', {class: 'queue-out'});
  const sendForm = h('form', {class: 'stack'}, h('h3', {}, 'Send'), body, to.el, h('button', {type: 'submit', class: 'primary'}, 'Send'));
  sendForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(sendForm, '');
    try {
      const r = await api.send(queue, body.value, to.input.value.trim());
      clearErrors(sendForm);
      body.value = '';
      replace(out, h('p', {class: 'muted'}, `Sent message ${r.id}.`));
      refresh();
    } catch (err) { formError(sendForm, err.message); }
  });
  const take = async (fn) => {
    try {
      const m = await fn();
      replace(out, m ? messageCard(m) : h('p', {class: 'muted'}, 'No message for you.'));
      refresh();
    } catch (err) { replace(out, h('p', {class: 'form-error'}, err.message)); }
  };
  replace(detail, h('h2', {}, queue), sendForm,
    h('div', {class: 'stack'}, h('h3', {}, 'Read'), from.el,
      h('div', {class: 'buttons'},
        h('button', {type: 'button', onclick: () => take(() => api.peek(queue, from.input.value.trim()))}, 'Peek'),
        h('button', {type: 'button', class: 'primary', onclick: () => take(() => api.receive(queue, from.input.value.trim()))}, 'Receive'))),
    out);
  detail.hidden = false;
  body.focus();
}

function messageCard(m) {
  return h('div', {class: 'queue-msg'},
    h('div', {class: 'msg-head'}, h('span', {class: 'sender'}, m.sender), m.to ? h('span', {class: 'whisper-tag'}, 'to ' + m.to) : '',
      h('time', {}, fmtTime(m.ts)), h('span', {class: 'muted'}, ` #${m.id}`)),
    h('pre', {class: 'text'}, m.body));
}

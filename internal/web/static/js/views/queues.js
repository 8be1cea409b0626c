// views/queues.js: the queues page: every queue with its ready, leased,
// delayed and dead-letter counts (or only those with messages waiting for
// me), creating and deleting queues; one queue's view is queue_detail.js.

import * as api from '../api.js';
import {h, replace, field, fieldError, clearErrors} from '../dom.js';
import {queueDetail} from './queue_detail.js';
import {checkRoomName} from './rooms.js';

export function queuesView(main, ctx) {
  const waiting = h('input', {type: 'checkbox'});
  const table = h('div', {class: 'table-wrap'});
  const detail = h('section', {class: 'card queue-detail', hidden: true});
  let reloadDetail = null;
  const open = (name) => { reloadDetail = queueDetail(detail, name, ctx, refresh); };
  const refresh = async () => {
    try {
      renderQueues(table, await api.queues(waiting.checked), ctx, open, refresh);
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
  const timer = setInterval(() => { refresh(); if (reloadDetail) reloadDetail(); }, 5000);
  return () => clearInterval(timer);
}

function renderQueues(table, queues, ctx, open, refresh) {
  if (!queues.length) {
    replace(table, h('p', {class: 'muted'}, 'No queues here yet.'));
    return;
  }
  const me = (ctx.user() || '').toLowerCase();
  replace(table, h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {class: 'num'}, 'Ready'), h('th', {class: 'num'}, 'Leased'),
      h('th', {class: 'num'}, 'Delayed'), h('th', {class: 'num'}, 'Dead letters'), h('th', {}, 'Creator'), h('th', {}, ''))),
    h('tbody', {}, queues.map((q) => h('tr', {'data-queue': q.name},
      h('td', {}, h('button', {type: 'button', class: 'link-button', onclick: () => open(q.name)}, q.name)),
      h('td', {class: 'num'}, String(q.stats.ready)),
      h('td', {class: 'num'}, String(q.stats.leased)),
      h('td', {class: 'num'}, String(q.stats.delayed)),
      h('td', {class: 'num'}, String(q.stats.dead_letters)),
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


// views/tokens.js: the Tokens page, under the user menu: make a personal API
// token for scripts and bots (its secret shown once, with a copy button),
// and list and revoke mine. Tokens are managed with the login session only.

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, clearErrors, fmtTime} from '../dom.js';
import {copyButton} from './links.js';

const DAY = 86400;

export function tokensView(main, ctx) {
  const mine = h('div', {class: 'table-wrap tokens-mine'});
  const refresh = async () => {
    try {
      renderMine(mine, await api.tokens(), ctx, refresh);
    } catch (e) {
      replace(mine, h('p', {class: 'form-error'}, 'Cannot load your tokens: ' + e.message));
    }
  };
  main.append(h('div', {class: 'stack-page'},
    h('section', {class: 'card'}, h('h1', {}, 'Make an API token'),
      h('p', {class: 'muted'}, 'Scripts and bots send it as "Authorization: Bearer TOKEN", or to the parley command as --token.'),
      createForm(refresh)),
    h('section', {class: 'card'}, h('h2', {}, 'My tokens'), mine)));
  refresh();
}

// names splits a comma-separated list of room or queue names.
function names(v) {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function createForm(refresh) {
  const name = field('Name', {name: 'name', required: true, maxlength: 64, placeholder: 'deploy bot'});
  const scope = field('Scope', {name: 'scope'}, 'select');
  for (const [v, label] of [['read', 'read: only reads'], ['write', 'write: reads and writes'], ['admin', 'admin: also admin routes (admins only)']]) {
    scope.input.append(h('option', {value: v}, label));
  }
  const rooms = field('Only these rooms (comma-separated)', {name: 'rooms', autocapitalize: 'none', spellcheck: false});
  const queues = field('Only these queues (comma-separated)', {name: 'queues', autocapitalize: 'none', spellcheck: false});
  const expires = field('Expires in', {name: 'expires'}, 'select');
  for (const [days, label] of [[7, '7 days'], [30, '30 days'], [90, '90 days'], [365, '1 year']]) {
    expires.input.append(h('option', {value: String(days * DAY), selected: days === 90}, label));
  }
  const result = h('div', {class: 'token-result', 'aria-live': 'polite'});
  const form = h('form', {class: 'stack tokens-form', novalidate: true},
    name.el, h('div', {class: 'row'}, scope.el, expires.el), h('div', {class: 'row'}, rooms.el, queues.el),
    h('button', {type: 'submit', class: 'primary'}, 'Make token'), result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    replace(result);
    const n = name.input.value.trim();
    fieldError(name.input, n ? '' : 'Give the token a name saying what it is for.');
    if (!n) return;
    const level = scope.input.value;
    const narrowed = [...names(rooms.input.value).map((r) => `${level}:room/${r}`), ...names(queues.input.value).map((q) => `${level}:queue/${q}`)];
    try {
      const t = await api.createToken(n, narrowed.length ? narrowed : [level], Number(expires.input.value));
      clearErrors(form);
      replace(result, h('div', {class: 'token-secret'},
        h('p', {}, h('strong', {}, 'Copy this token now: it is shown only once.')),
        h('code', {class: 'secret'}, t.token), ' ', copyButton(t.token)));
      name.input.value = rooms.input.value = queues.input.value = '';
      refresh();
    } catch (err) {
      if (err.status === 400 && /^name/.test(err.message)) fieldError(name.input, err.message);
      else formError(form, err.message);
    }
  });
  return form;
}

function renderMine(el, tokens, ctx, refresh) {
  if (!tokens.length) {
    replace(el, h('p', {class: 'muted'}, 'You have no API tokens.'));
    return;
  }
  replace(el, h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Scopes'), h('th', {}, 'Created'), h('th', {}, 'Expires'), h('th', {}, 'Last used'), h('th', {}, ''))),
    h('tbody', {}, tokens.map((t) => h('tr', {'data-id': t.id},
      h('td', {}, t.name, h('div', {class: 'muted'}, t.id)),
      h('td', {}, t.scopes.map((s) => h('span', {class: 'tag'}, s))),
      h('td', {}, fmtTime(t.created_at)),
      h('td', {}, t.expired ? h('span', {class: 'state state-expired'}, 'expired') : fmtTime(t.expires_at)),
      h('td', {}, t.last_used_at ? fmtTime(t.last_used_at) : h('span', {class: 'muted'}, 'never')),
      h('td', {}, h('button', {type: 'button', class: 'link-button danger revoke', onclick: async () => {
        try { await api.revokeToken(t.id); ctx.notify(`Token "${t.name}" revoked.`); refresh(); } catch (e) { ctx.notify(e.message, 'error'); }
      }}, 'Revoke')))))));
}

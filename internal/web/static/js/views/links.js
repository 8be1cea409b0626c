// views/links.js: the links page: shorten a URL (optionally with a chosen
// code), copy the short link, and my links with their hit counts and
// states, filtered by tag, text and state; each opens its page (link.js).

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, clearErrors, fmtTime, shortLabel} from '../dom.js';

export function linksView(main, ctx) {
  const mine = h('div', {class: 'table-wrap links-mine'});
  const tag = h('input', {name: 'tag', placeholder: 'tag', 'aria-label': 'Filter by tag', autocapitalize: 'none', spellcheck: false});
  const q = h('input', {name: 'q', type: 'search', placeholder: 'code or URL contains…', 'aria-label': 'Filter by text'});
  const state = h('select', {name: 'state', 'aria-label': 'Filter by state'},
    ['', 'active', 'disabled', 'expired', 'exhausted'].map((s) => h('option', {value: s}, s || 'any state')));
  const refresh = async () => {
    try {
      renderMine(mine, await api.myLinks({tag: tag.value.trim(), q: q.value.trim(), state: state.value}), ctx, refresh);
    } catch (e) {
      replace(mine, h('p', {class: 'form-error'}, 'Cannot load your links: ' + e.message));
    }
  };
  for (const el of [tag, q, state]) el.addEventListener('change', refresh);
  main.append(h('div', {class: 'stack-page'},
    h('section', {class: 'card'}, h('h1', {}, 'Shorten a link'), shortenForm(refresh)),
    h('section', {class: 'card'}, h('h2', {}, 'My links'), h('div', {class: 'filters links-filter'}, tag, q, state), mine)));
  refresh();
  const timer = setInterval(refresh, 10000);
  return () => clearInterval(timer);
}

// checkURL returns what is wrong with a long URL, or ''.
export function checkURL(v) {
  let u;
  try { u = new URL(v); } catch (e) { return 'Enter a full address, like https://example.com/page.'; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'Only http and https addresses can be shortened.';
  return '';
}

function shortenForm(refresh) {
  const url = field('Long URL', {type: 'url', name: 'url', required: true, placeholder: 'https://…', autocapitalize: 'none', spellcheck: false});
  const code = field('Code (optional)', {name: 'code', autocapitalize: 'none', spellcheck: false, maxlength: 64});
  const result = h('div', {class: 'short-result', 'aria-live': 'polite'});
  const form = h('form', {class: 'stack', novalidate: true}, url.el, code.el, h('button', {type: 'submit', class: 'primary'}, 'Shorten'), result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const bad = checkURL(url.input.value.trim());
    fieldError(url.input, bad);
    if (bad) return;
    try {
      const l = await api.createLink(url.input.value.trim(), code.input.value.trim());
      clearErrors(form);
      replace(result, h('span', {class: 'muted'}, 'Short link: '), h('a', {href: l.short_url, class: 'short', target: '_blank', rel: 'noopener'}, l.short_url), ' ', copyButton(l.short_url));
      url.input.value = '';
      code.input.value = '';
      refresh();
    } catch (err) {
      if (err.status === 409) fieldError(code.input, 'That code is taken.');
      else if (err.status === 400) fieldError(url.input, err.message);
      else formError(form, err.message);
    }
  });
  return form;
}

// copyButton copies text to the clipboard (with a fallback for pages not
// served over HTTPS, where navigator.clipboard is missing).
export function copyButton(text) {
  const b = h('button', {type: 'button', class: 'copy'}, 'Copy');
  b.addEventListener('click', async () => {
    let ok = false;
    try {
      if (navigator.clipboard) { await navigator.clipboard.writeText(text); ok = true; }
    } catch (e) { /* fall back below */ }
    if (!ok) {
      const t = h('textarea', {class: 'offscreen'}, text);
      document.body.append(t);
      t.select();
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      t.remove();
    }
    b.textContent = ok ? 'Copied' : 'Press Ctrl+C';
    setTimeout(() => { b.textContent = 'Copy'; }, 1500);
  });
  return b;
}

function renderMine(el, links, ctx, refresh) {
  if (!links.length) {
    replace(el, h('p', {class: 'muted'}, 'You have not shortened anything yet.'));
    return;
  }
  replace(el, h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'Short'), h('th', {}, 'Goes to'), h('th', {class: 'num'}, 'Hits'), h('th', {}, 'State'), h('th', {}, 'Created'), h('th', {}, ''))),
    h('tbody', {}, links.map((l) => h('tr', {'data-code': l.code},
      h('td', {}, h('a', {href: l.short_url, target: '_blank', rel: 'noopener'}, shortLabel(l.short_url)), ' ', copyButton(l.short_url)),
      h('td', {class: 'long-url'}, h('span', {title: l.url}, l.url), (l.tags || []).map((t) => h('span', {class: 'tag'}, t))),
      h('td', {class: 'num hits'}, String(l.hits)),
      h('td', {}, h('span', {class: 'state state-' + l.state}, l.state)),
      h('td', {}, fmtTime(l.created_at)),
      h('td', {}, h('a', {href: '#/link/' + encodeURIComponent(l.code), class: 'details'}, 'Stats & edit')),
      h('td', {}, h('button', {type: 'button', class: 'link-button danger', onclick: async () => {
        try { await api.deleteLink(l.code); refresh(); } catch (e) { ctx.notify(e.message, 'error'); }
      }}, 'Delete')))))));
}

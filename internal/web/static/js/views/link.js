// views/link.js: one short link (#/link/CODE): where it goes and its state,
// its visits (a daily bar chart and breakdowns by referrer, browser and OS,
// drawn with DOM and SVG elements), its QR code, and a form to edit it.

import * as api from '../api.js';
import {h, svg, replace, field, fieldError, formError, clearErrors, fmtTime, shortLabel} from '../dom.js';

const DAYS = 30;

export function linkView(main, ctx, code) {
  const head = h('section', {class: 'card link-head'}, h('h1', {}, '/s/' + code));
  const stats = h('section', {class: 'card link-stats'}, h('h2', {}, 'Visits'));
  const qr = h('section', {class: 'card link-qr'}, h('h2', {}, 'QR code'));
  const edit = h('section', {class: 'card link-edit'}, h('h2', {}, 'Edit'));
  main.append(h('div', {class: 'stack-page'}, h('a', {href: '#/links'}, '← My links'), head, stats, qr, edit));
  let formShown = false;
  const refresh = async () => {
    let l;
    try {
      l = await api.linkInfo(code);
    } catch (e) {
      replace(head, h('h1', {}, '/s/' + code), h('p', {class: 'form-error'}, 'Cannot load the link: ' + e.message));
      return;
    }
    renderHead(head, l);
    if (!formShown) {
      formShown = true;
      replace(edit, h('h2', {}, 'Edit'), editForm(l, ctx, refresh));
      showQR(qr, code);
    }
    try {
      renderStats(stats, await api.linkStats(code, DAYS));
    } catch (e) {
      replace(stats, h('h2', {}, 'Visits'), h('p', {class: 'muted'}, e.status === 403 ? 'Only the link\'s owner sees its visits.' : 'Cannot load the visits: ' + e.message));
    }
  };
  refresh();
  const timer = setInterval(refresh, 10000);
  return () => clearInterval(timer);
}

function renderHead(el, l) {
  replace(el,
    h('h1', {}, h('a', {href: l.short_url, class: 'short', target: '_blank', rel: 'noopener'}, shortLabel(l.short_url)),
      ' ', h('span', {class: 'state state-' + l.state}, l.state)),
    h('p', {class: 'long-url'}, 'Goes to ', h('span', {class: 'target'}, l.url),
      ' · ', h('a', {href: l.short_url + '+', target: '_blank', rel: 'noopener', class: 'preview'}, 'preview')),
    h('p', {class: 'muted'}, `${l.hits} visits (${l.bots} bots) · redirect ${l.redirect_status} · created ${fmtTime(l.created_at)}`,
      l.expires_at ? ' · expires ' + fmtTime(l.expires_at) : '',
      l.max_visits ? ` · at most ${l.max_visits} visits` : ''),
    l.tags.length ? h('p', {class: 'tags'}, l.tags.map((t) => h('span', {class: 'tag'}, t))) : null);
}

// dayKey is a date as the stats name it: YYYY-MM-DD, UTC.
const dayKey = (d) => d.toISOString().slice(0, 10);

function renderStats(el, st) {
  const byDay = new Map(st.days.map((d) => [d.date, d]));
  const days = [];
  const today = new Date();
  for (let i = DAYS - 1; i >= 0; i--) {
    const key = dayKey(new Date(today.getTime() - i * 86400000));
    days.push(byDay.get(key) || {date: key, visits: 0, bots: 0});
  }
  replace(el, h('h2', {}, 'Visits'),
    h('p', {class: 'muted'}, `${st.visits} in all · ${st.bots} by bots · ${st.direct} direct · counted a few seconds late, no visitor data kept`),
    dayChart(days),
    h('div', {class: 'breakdowns'},
      breakdown('Referrers', st.referrers, 'referrers'),
      breakdown('Browsers', st.browsers, 'browsers'),
      breakdown('Systems', st.os, 'os')));
}

// dayChart draws visits per day as bars, bots a shade apart on top.
function dayChart(days, width = 600, height = 120) {
  const max = Math.max(1, ...days.map((d) => d.visits));
  const bw = width / days.length;
  const chart = svg('svg', {viewBox: `0 0 ${width} ${height + 14}`, class: 'day-chart', role: 'img',
    'aria-label': `visits per day for the last ${days.length} days, peak ${max}`});
  days.forEach((d, i) => {
    const hAll = (d.visits / max) * height;
    const hBots = (d.bots / max) * height;
    const x = (i * bw + 1).toFixed(1);
    const g = svg('g', {class: 'day', 'data-date': d.date, 'data-visits': d.visits},
      svg('title', {}, `${d.date}: ${d.visits} visits, ${d.bots} by bots`),
      svg('rect', {x, y: (height - hAll).toFixed(1), width: (bw - 2).toFixed(1), height: hAll.toFixed(1), class: 'bar'}),
      svg('rect', {x, y: (height - hAll).toFixed(1), width: (bw - 2).toFixed(1), height: hBots.toFixed(1), class: 'bar bots'}));
    chart.append(g);
  });
  chart.append(svg('text', {x: 0, y: height + 12, class: 'axis'}, days[0].date),
    svg('text', {x: width, y: height + 12, class: 'axis', 'text-anchor': 'end'}, days[days.length - 1].date));
  return chart;
}

function breakdown(title, list, cls) {
  const max = Math.max(1, ...list.map((c) => c.visits));
  return h('div', {class: 'breakdown ' + cls}, h('h3', {}, title),
    list.length ? h('table', {}, h('tbody', {}, list.map((c) => h('tr', {},
      h('td', {class: 'name'}, c.name),
      h('td', {}, h('meter', {min: 0, max, value: c.visits})),
      h('td', {class: 'num'}, String(c.visits)))))) : h('p', {class: 'muted'}, 'None yet.'));
}

// dataURL reads bytes as a data: URL (the page's policy allows images from
// data: but not blob: URLs).
function dataURL(bytes, type) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(new Blob([bytes], {type}));
  });
}

async function showQR(el, code) {
  try {
    const [png, svgBytes] = await Promise.all([api.linkQR(code, 'png'), api.linkQR(code, 'svg')]);
    const [pngURL, svgURL] = await Promise.all([dataURL(png, 'image/png'), dataURL(svgBytes, 'image/svg+xml')]);
    replace(el, h('h2', {}, 'QR code'),
      h('img', {src: pngURL, alt: 'QR code of /s/' + code, class: 'qr', width: 200, height: 200}),
      h('p', {}, h('a', {href: pngURL, download: code + '.png'}, 'Download PNG'), ' · ',
        h('a', {href: svgURL, download: code + '.svg'}, 'Download SVG')));
  } catch (e) {
    replace(el, h('h2', {}, 'QR code'), h('p', {class: 'form-error'}, 'Cannot draw the QR code: ' + e.message));
  }
}

// localInput formats Unix ms for a datetime-local input.
function localInput(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function editForm(l, ctx, refresh) {
  const url = field('Long URL', {type: 'url', name: 'url', value: l.url, required: true, autocapitalize: 'none', spellcheck: false});
  const expires = field('Expires (empty: never)', {type: 'datetime-local', name: 'expires_at', value: localInput(l.expires_at)});
  const max = field('Max visits (0: no limit)', {type: 'number', name: 'max_visits', min: 0, value: String(l.max_visits || 0)});
  const status = h('select', {name: 'redirect_status'}, [301, 302, 307, 308].map((s) =>
    h('option', {value: String(s), selected: s === l.redirect_status}, String(s))));
  const tags = field('Tags (comma-separated)', {name: 'tags', value: l.tags.join(', '), autocapitalize: 'none', spellcheck: false});
  const disabled = h('input', {type: 'checkbox', name: 'disabled', checked: l.disabled});
  const inputs = {url: url.input, expires_at: expires.input, max_visits: max.input, redirect_status: status, tags: tags.input};
  const form = h('form', {class: 'stack link-form', novalidate: true},
    url.el, expires.el, max.el,
    h('label', {class: 'field'}, h('span', {class: 'label'}, 'Redirect status'), status),
    tags.el,
    h('label', {class: 'check'}, disabled, ' Disabled (answers 410 until enabled)'),
    h('div', {class: 'buttons'},
      h('button', {type: 'submit', class: 'primary'}, 'Save'),
      h('button', {type: 'button', class: 'danger-outline', onclick: async () => {
        try { await api.deleteLink(l.code); ctx.go('#/links'); } catch (e) { ctx.notify(e.message, 'error'); }
      }}, 'Delete')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    const patch = {
      url: url.input.value.trim(),
      expires_at: expires.input.value ? new Date(expires.input.value).getTime() : 0,
      max_visits: Number(max.input.value || 0),
      redirect_status: Number(status.value),
      tags: tags.input.value.split(',').map((t) => t.trim()).filter((t) => t),
      disabled: disabled.checked,
    };
    try {
      await api.updateLink(l.code, patch);
      clearErrors(form);
      ctx.notify('Saved.');
      refresh();
    } catch (err) {
      const named = Object.keys(inputs).find((k) => err.status === 400 && err.message.includes(k));
      if (named) fieldError(inputs[named], err.message);
      else formError(form, err.message);
    }
  });
  return form;
}

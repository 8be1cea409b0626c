// views/cluster.js: the cluster dashboard: nodes with health and zone,
// requests per node (ok/failed), requests per second and cache hits,
// partitions with their leader and replica lag, moves in progress and
// recent events (failovers, rebalances). It refreshes every 2 s; a panel
// whose endpoint this node does not serve (404) is hidden.

import * as api from '../api.js';
import {h, replace, fmtTime} from '../dom.js';
import {sparkline} from './chart.js';

const REFRESH_MS = 2000;
const HISTORY = 60; // requests/s samples kept per node for the chart

export function clusterView(main) {
  const panel = (title, cls) => h('section', {class: 'card ' + cls}, h('h2', {}, title), h('div', {class: 'table-wrap'}));
  const p = {
    nodes: panel('Nodes', 'dash-nodes'),
    rate: panel('Requests per second', 'dash-rate'),
    parts: panel('Partitions', 'dash-parts'),
    moves: panel('Moves in progress', 'dash-moves'),
    events: panel('Recent events', 'dash-events'),
  };
  p.rate.hidden = true;
  p.moves.hidden = true;
  p.events.hidden = true;
  const summary = h('p', {class: 'muted dash-summary'}, 'Loading…');
  main.append(h('div', {class: 'dashboard'}, h('div', {class: 'dash-title'}, h('h1', {}, 'Cluster'), summary),
    p.nodes, p.rate, p.parts, p.moves, p.events));

  const st = {rates: new Map(), statsMissing: false, eventsMissing: false, stopped: false};
  let timer = null;
  const tick = async () => {
    await refresh(p, summary, st);
    if (!st.stopped) timer = setTimeout(tick, REFRESH_MS);
  };
  tick();
  return () => { st.stopped = true; clearTimeout(timer); };
}

// optional runs an endpoint that may not exist on this node: it returns
// null (and remembers) on 404.
async function optional(st, key, fn) {
  if (st[key]) return null;
  try {
    return await fn();
  } catch (e) {
    if (e.status === 404) st[key] = true;
    return null;
  }
}

async function refresh(p, summary, st) {
  let c;
  const [stats, events] = await Promise.all([
    optional(st, 'statsMissing', api.clusterStats),
    optional(st, 'eventsMissing', api.clusterEvents),
  ]);
  try {
    c = await api.cluster();
  } catch (e) {
    summary.textContent = 'Cannot read the cluster map: ' + e.message;
    return;
  }
  const byNode = statsByNode(stats);
  const alive = c.nodes.filter((n) => n.state === 'alive').length;
  const leaderless = c.partitions.filter((x) => !x.leader).length;
  summary.textContent = `${c.nodes.length} nodes (${alive} alive) · ${c.partitions.length} partitions` +
    (leaderless ? ` · ${leaderless} without a leader` : '') + (c.cluster_id ? ` · cluster ${c.cluster_id}` : '');
  renderNodes(p.nodes, c.nodes, byNode);
  renderRates(p.rate, c.nodes, byNode, st);
  renderPartitions(p.parts, c.partitions);
  p.moves.hidden = !c.moves.length;
  if (c.moves.length) {
    table(p.moves, ['Partition', 'From', 'To', 'Phase'], c.moves.map((m) => [String(m.partition), m.from || '—', m.to || '—', m.phase]));
  }
  p.events.hidden = !events;
  if (events) renderEvents(p.events, events.events || []);
}

// pick returns the first of names present in o (the stats shape is read
// leniently: ok or requests_ok, and so on).
function pick(o, ...names) {
  for (const n of names) if (o && o[n] !== undefined && o[n] !== null) return o[n];
  return undefined;
}

// statsByNode maps node id to {ok, failed, rps, hits, misses}.
function statsByNode(stats) {
  const out = new Map();
  if (!stats) return out;
  const rows = Array.isArray(stats) ? stats : (stats.nodes || stats.stats || []);
  for (const s of rows) {
    const id = pick(s, 'node', 'id', 'node_id');
    const req = s.requests || {};
    const cache = s.cache || {};
    out.set(id, {
      ok: pick(s, 'requests_ok', 'ok') ?? pick(req, 'ok'),
      failed: pick(s, 'requests_failed', 'failed') ?? pick(req, 'failed'),
      rps: pick(s, 'requests_per_sec', 'requests_per_second', 'rps') ?? pick(req, 'per_sec', 'per_second', 'rps'),
      hits: pick(s, 'cache_hits') ?? pick(cache, 'hits'),
      misses: pick(s, 'cache_misses') ?? pick(cache, 'misses'),
      error: s.error,
    });
  }
  return out;
}

const num = (x) => (x === undefined ? '—' : typeof x === 'number' && !Number.isInteger(x) ? x.toFixed(1) : String(x));

function renderNodes(panel, nodes, byNode) {
  const withStats = byNode.size > 0;
  const head = ['Node', 'Address', 'Zone', 'Health', 'Replicas', 'Leads'];
  if (withStats) head.push('Requests ok', 'Failed', 'Req/s', 'Cache hits');
  table(panel, head, nodes.map((n) => {
    const s = byNode.get(n.id) || {};
    const row = [n.id, n.addr, n.zone || '—',
      h('span', {class: 'health ' + n.state}, h('span', {class: 'dot ' + n.state}), n.state + (n.standby ? ' (standby)' : '')),
      String(n.replicas), String(n.leaders)];
    if (withStats) {
      const ratio = s.hits !== undefined && s.hits + (s.misses || 0) > 0 ? ` (${Math.round(100 * s.hits / (s.hits + (s.misses || 0)))}%)` : '';
      row.push(num(s.ok), h('span', {class: s.failed ? 'bad' : ''}, num(s.failed)), num(s.rps), num(s.hits) + ratio);
    }
    return row;
  }), (i) => ({'data-node': nodes[i].id}));
}

function renderRates(panel, nodes, byNode, st) {
  panel.hidden = byNode.size === 0;
  if (panel.hidden) return;
  let total = 0;
  const rows = nodes.map((n) => {
    const rps = Number((byNode.get(n.id) || {}).rps) || 0;
    total += rps;
    const hist = st.rates.get(n.id) || [];
    hist.push(rps);
    if (hist.length > HISTORY) hist.shift();
    st.rates.set(n.id, hist);
    return [n.id, num(rps), sparkline(hist)];
  });
  rows.push([h('strong', {}, 'all'), h('strong', {}, num(total)), '']);
  table(panel, ['Node', 'Now', 'Last two minutes'], rows);
}

// lagText says how far behind its leader a replica is: nothing for the
// leader, "lag unknown" when its node did not answer (never "0 behind").
function lagText(r) {
  if (r.role === 'leader') return '';
  if (r.lag_entries == null) return ' · lag unknown';
  return ` · ${r.lag_entries} behind` + (r.lag_ms ? `, ${r.lag_ms} ms` : '');
}

function renderPartitions(panel, parts) {
  table(panel, ['Partition', 'Leader', 'Replicas (role, lag)'], parts.map((x) => [
    String(x.id),
    x.leader ? x.leader : h('span', {class: 'bad'}, 'none'),
    h('span', {class: 'replicas'}, (x.replicas || []).map((r) => h('span', {class: 'replica ' + r.role + (r.lag_entries > 0 ? ' lagging' : '')},
      `${r.node} ${r.role}`, lagText(r)))),
  ]));
}

function renderEvents(panel, events) {
  if (!events.length) {
    replace(panel.querySelector('.table-wrap'), h('p', {class: 'muted'}, 'Nothing has happened lately.'));
    return;
  }
  const recent = [...events].sort((a, b) => (b.ts || 0) - (a.ts || 0)).slice(0, 50);
  table(panel, ['When', 'What', 'Node', 'Partition', 'Detail'], recent.map((e) => [
    e.ts ? fmtTime(e.ts) : '—', e.kind || '', e.node || '', e.group !== undefined && e.group !== null ? String(e.group) : '', e.detail || '']));
}

// table fills a panel's table from header names and rows of cells (text or
// nodes); attrs(i) gives row attributes.
function table(panel, head, rows, attrs) {
  replace(panel.querySelector('.table-wrap'), h('table', {},
    h('thead', {}, h('tr', {}, head.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows.map((r, i) => h('tr', attrs ? attrs(i) : {}, r.map((c) => h('td', {}, c)))))));
}

// nodes.js: the nodes the web app may call, the page's own first, then the
// other members the last cluster map (GET /api/v1/cluster) showed alive.
// The API calls and the stream share one node in use and move on to the
// next together when it cannot be reached.
//
// Only a node in the state 'alive' becomes a candidate: an unreachable,
// suspect, dead, left, draining or unknown node may be gone, or its address
// taken by someone else, and must never be sent the session token.
// Candidates take the page's own scheme, so a page served over HTTPS calls
// other nodes over HTTPS and WSS only.

const NODES_KEY = 'parley.nodes';

// HOST_PORT is an advertised HTTP address: a DNS name, an IPv4 address or
// a bracketed IPv6 address, and a port (no path, no user, no spaces).
const HOST_PORT = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/;

let others = load(); // origins of the other alive members
let index = 0; // the node in use, an index in candidates()

// candidates returns the origins the app may call, the page's own first.
export function candidates() {
  return [location.origin, ...others.filter((o) => o !== location.origin)];
}

// current returns the origin of the node in use.
export function current() {
  const all = candidates();
  return all[index % all.length];
}

// failed reports that origin could not be reached: when it is the node in
// use, the next candidate (the page's own after the last) takes its place.
export function failed(origin) {
  const all = candidates();
  if (all[index % all.length] === origin) index = (index + 1) % all.length;
}

// learn replaces the other candidates by the alive members of a cluster
// map's nodes. The node in use stays in use while it is one of them.
export function learn(nodes) {
  const inUse = current();
  others = aliveOrigins(nodes);
  try { sessionStorage.setItem(NODES_KEY, JSON.stringify(others)); } catch (e) { /* kept in memory */ }
  index = Math.max(0, candidates().indexOf(inUse));
}

// aliveOrigins returns the origins, in the page's scheme, of the nodes in
// the state 'alive' with a well-formed address, the page's own left out.
// An unspecified host (0.0.0.0, [::]) is the page's host.
export function aliveOrigins(nodes) {
  const out = [];
  for (const n of nodes || []) {
    if (!n || n.state !== 'alive' || typeof n.addr !== 'string' || !HOST_PORT.test(n.addr)) continue;
    const o = location.protocol + '//' + n.addr.replace(/^(?:0\.0\.0\.0|\[::\])(?=:)/, pageHost());
    if (o !== location.origin && !out.includes(o)) out.push(o);
  }
  return out;
}

// pageHost is the page's host name, bracketed when it is an IPv6 address.
function pageHost() {
  const h = location.hostname;
  return h.includes(':') && !h.startsWith('[') ? '[' + h + ']' : h;
}

// load returns the candidates remembered by this tab, so they are known
// after a reload while the page's node is down; anything that is not an
// origin of the page's scheme is dropped.
function load() {
  try {
    const list = JSON.parse(sessionStorage.getItem(NODES_KEY) || '[]');
    const prefix = location.protocol + '//';
    return Array.isArray(list) ? list.filter((o) => typeof o === 'string' &&
      o.startsWith(prefix) && HOST_PORT.test(o.slice(prefix.length))) : [];
  } catch (e) {
    return [];
  }
}

// wsURL returns the WebSocket URL of path on origin (ws: for http:, wss:
// for https:).
export function wsURL(origin, path) {
  return origin.replace(/^http/, 'ws') + path;
}

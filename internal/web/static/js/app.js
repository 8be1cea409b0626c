// app.js: the web app's entry point. It keeps the session, routes by the
// URL fragment (#/rooms, #/room/NAME, #/queues, #/kv, #/links, #/link/CODE, #/cluster,
// #/tokens, #/login, #/signup) and owns the one live stream shared by the views.

import * as api from './api.js';
import {Stream} from './stream.js';
import {authView} from './views/auth.js';
import {roomsView} from './views/rooms.js';
import {roomView} from './views/room.js';
import {queuesView} from './views/queues.js';
import {kvView} from './views/kv.js';
import {linksView} from './views/links.js';
import {linkView} from './views/link.js';
import {clusterView} from './views/cluster.js';
import {tokensView} from './views/tokens.js';
import {mentionNotices} from './views/notify.js';

// NODES_MS is how often the failover candidates are learned again from the
// cluster map (also whenever the stream comes up), so a member that died
// since is not tried, nor sent the token.
const NODES_MS = 60000;

const main = document.getElementById('main');
const banner = document.getElementById('banner');
let cleanup = null; // stops the current view's timers and listeners
let stream = null;
let stopNotices = null; // the title count and desktop notifications of mentions

// ctx is what views get: the session, the stream and small page services.
const ctx = {
  user: () => (api.session() || {}).username,
  stream() {
    const s = api.session();
    if (!stream && s) {
      stream = new Stream(s.token);
      stream.on('state', showStreamState);
      stream.on('unauthorized', sessionEnded);
      stopNotices = mentionNotices(stream, ctx.user, document.getElementById('who'));
      api.refreshNodes(); // learn the other members while this node answers
    }
    return stream;
  },
  go(hash) { location.hash = hash; },
  notify,
};

// notify shows a short message in the banner; kind is 'info' or 'error'.
let bannerTimer = null;
function notify(msg, kind = 'info') {
  banner.textContent = msg;
  banner.className = 'banner ' + kind;
  banner.hidden = !msg;
  clearTimeout(bannerTimer);
  if (msg && kind === 'info') bannerTimer = setTimeout(() => { banner.hidden = true; }, 4000);
}

let everLive = false;
function showStreamState(state, host) {
  document.body.dataset.stream = state;
  if (state === 'live') {
    if (everLive) api.refreshNodes(); // back, maybe through another node: the map may have changed
    everLive = true;
  }
  if (state === 'down' && everLive) notify('Live updates interrupted; reconnecting…', 'warn');
  else if (state === 'live' && banner.classList.contains('warn')) {
    notify(host === location.host ? 'Live updates resumed.' : `Live updates resumed through ${host}.`);
  }
}

function signedOut() {
  if (stream) { stream.close(); stream = null; everLive = false; }
  if (stopNotices) { stopNotices(); stopNotices = null; }
  api.forgetSession();
  route();
}

const routes = {
  login: (el) => authView(el, ctx, 'login'),
  signup: (el) => authView(el, ctx, 'signup'),
  rooms: (el) => roomsView(el, ctx),
  room: (el, arg) => roomView(el, ctx, arg.split('/')[0], Number(arg.split('/')[1]) || 0), // #/room/NAME/SEQ opens at message SEQ
  queues: (el) => queuesView(el, ctx),
  kv: (el) => kvView(el, ctx),
  links: (el) => linksView(el, ctx),
  link: (el, arg) => linkView(el, ctx, arg),
  cluster: (el) => clusterView(el, ctx),
  tokens: (el) => tokensView(el, ctx),
};

// route renders the view the fragment names.
function route() {
  const [, name = '', ...rest] = location.hash.split('/');
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : '';
  const s = api.session();
  let view = routes[name] ? name : '';
  if (!s && view !== 'signup') view = 'login';
  if (s && (view === '' || view === 'login' || view === 'signup')) view = 'rooms';
  if (('#/' + view) !== location.hash && view !== 'room' && view !== 'link') {
    history.replaceState(null, '', '#/' + view);
  }
  if (cleanup) { cleanup(); cleanup = null; }
  main.replaceChildren();
  document.getElementById('nav').hidden = !s;
  document.getElementById('who').hidden = !s;
  document.getElementById('who-name').textContent = s ? s.username : '';
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === view || (view === 'room' && a.dataset.nav === 'rooms') || (view === 'link' && a.dataset.nav === 'links'));
  }
  if (s) ctx.stream();
  cleanup = routes[view](main, arg) || null;
}

document.getElementById('logout').addEventListener('click', async () => {
  // Close the stream first: its unauthorized frame would report this
  // logout as a session that ended.
  if (stream) stream.close();
  try { await api.logout(); } catch (e) { /* signed out locally either way */ }
  signedOut();
});
// sessionEnded shows the sign-in page once the session ended: a call
// refused with 401 or the stream's unauthorized frame.
function sessionEnded() {
  notify('Your session has ended; please log in again.', 'error');
  signedOut();
}
api.onUnauthorized(sessionEnded);
window.addEventListener('hashchange', route);
setInterval(() => { if (api.session()) api.refreshNodes(); }, NODES_MS);
route();

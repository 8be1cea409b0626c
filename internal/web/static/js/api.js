// api.js: the HTTP API v1 client of the web app. Calls go to the page's
// own node while it answers, and fail over to the other alive members
// (nodes.js) when it cannot be reached; the session token travels in the
// Authorization header and is kept in localStorage, never in a URL.

import * as nodes from './nodes.js';

const SESSION_KEY = 'parley.session';

// ApiError is a failed call: status 0 means the node could not be reached.
export class ApiError extends Error {
  constructor(status, code, message, retryable) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryable = retryable;
  }
}

// session returns the stored {token, username, expires_at}, or null.
export function session() {
  try {
    const s = JSON.parse(localStorage.getItem(SESSION_KEY) || 'null');
    if (s && s.token && (!s.expires_at || s.expires_at > Date.now())) return s;
  } catch (e) { /* a damaged entry counts as signed out */ }
  return null;
}

function saveSession(s) {
  if (s) localStorage.setItem(SESSION_KEY, JSON.stringify(s));
  else localStorage.removeItem(SESSION_KEY);
}

// onUnauthorized is called when a signed-in call is refused with 401 (the
// session expired or was logged out elsewhere).
let unauthorized = () => {};
export function onUnauthorized(fn) { unauthorized = fn; }

// requestId returns a random id for Idempotency-Key, so a retried write is
// applied once (crypto.randomUUID needs a secure context; this does not).
export function requestId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// request sends one call to the node in use and returns the parsed JSON
// body (null for 204). A node that cannot be reached is left for the next
// alive member. Calls safe to repeat, GETs and writes with an idempotency
// key, are retried on the next node and on retryable answers (503), writes
// with the same key so they apply once; any other call is sent once.
//
// opts: body is sent as JSON, raw (a string, sent as UTF-8, or bytes) as it
// is; headers are added; with bytes the answer is {bytes, headers} instead
// of JSON; idem is an idempotency key; anonymous leaves the token out.
export async function request(method, path, opts = {}) {
  const headers = {Accept: 'application/json', ...opts.headers};
  const s = session();
  if (s && !opts.anonymous) headers.Authorization = 'Bearer ' + s.token;
  let body;
  if (opts.raw !== undefined) {
    headers['Content-Type'] = 'application/octet-stream';
    body = opts.raw;
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  if (opts.idem) headers['Idempotency-Key'] = opts.idem;
  const safe = method === 'GET' || !!opts.idem;
  const attempts = safe ? (opts.attempts || 3) + nodes.candidates().length - 1 : 1;
  const tried = new Set();
  let last;
  for (let i = 0; i < attempts; i++) {
    const origin = nodes.current();
    if (tried.has(origin)) await sleep(300 * 2 ** Math.min(i, 4)); // a new node is tried at once
    tried.add(origin);
    try {
      return await once(origin, method, path, headers, body, opts.bytes);
    } catch (e) {
      last = e;
      if (e.status === 0) nodes.failed(origin);
      if (!(e instanceof ApiError) || !(e.status === 0 || e.retryable)) break;
    }
  }
  if (last.status === 401 && headers.Authorization) unauthorized();
  throw last;
}

async function once(origin, method, path, headers, body, bytes) {
  let res;
  try {
    res = await fetch(origin + path, {method, headers, body, cache: 'no-store'});
  } catch (e) {
    throw new ApiError(0, 'network', 'Cannot reach the server: ' + e.message, true);
  }
  if (res.status === 204) return null;
  if (res.ok && bytes) return {bytes: new Uint8Array(await res.arrayBuffer()), headers: res.headers};
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || 'http_' + res.status,
      err.message || res.statusText || 'request failed', !!err.retryable);
  }
  return data;
}

const enc = encodeURIComponent;
const qs = (q) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
};

// Users and sessions.
export const register = (username, password) =>
  request('POST', '/api/v1/users', {body: {username, password}, anonymous: true});
export async function login(username, password) {
  const s = await request('POST', '/api/v1/sessions', {body: {username, password}, anonymous: true});
  saveSession(s);
  return s;
}
export async function logout() {
  try { await request('DELETE', '/api/v1/sessions/current'); } finally { saveSession(null); }
}
export const forgetSession = () => saveSession(null);
export const onlineUsers = () => request('GET', '/api/v1/users/online');

// Rooms.
export const rooms = () => request('GET', '/api/v1/rooms').then((r) => r.rooms);
export const createRoom = (spec) => request('POST', '/api/v1/rooms', {body: spec, idem: requestId()});
export const joinRoom = (room, password) =>
  request('POST', `/api/v1/rooms/${enc(room)}/join`, {body: password ? {password} : {}, idem: requestId()});
export const leaveRoom = (room) => request('POST', `/api/v1/rooms/${enc(room)}/leave`, {body: {}, idem: requestId()});
export const markRead = (room, seq) => request('POST', `/api/v1/rooms/${enc(room)}/read`, {body: {seq}, idem: requestId()});
export const members = (room) => request('GET', `/api/v1/rooms/${enc(room)}/members`).then((r) => r.members);
export const post = (room, text, to) =>
  request('POST', `/api/v1/rooms/${enc(room)}/messages`, {body: to && to.length ? {text, to} : {text}, idem: requestId()});
export const reply = (room, text, replyTo) =>
  request('POST', `/api/v1/rooms/${enc(room)}/messages`, {body: {text, reply_to: replyTo}, idem: requestId()});
const msgPath = (room, seq) => `/api/v1/rooms/${enc(room)}/messages/${seq}`;
export const message = (room, seq) => request('GET', msgPath(room, seq));
export const edit = (room, seq, text) => request('PATCH', msgPath(room, seq), {body: {text}, idem: requestId()});
export const deleteMessage = (room, seq) => request('DELETE', msgPath(room, seq), {idem: requestId()});
export const react = (room, seq, emoji, undo) =>
  request(undo ? 'DELETE' : 'PUT', msgPath(room, seq) + '/reactions/' + enc(emoji), {idem: requestId()});
export const pin = (room, seq, undo) => request(undo ? 'DELETE' : 'PUT', `/api/v1/rooms/${enc(room)}/pins/${seq}`, {idem: requestId()});
export const pins = (room) => request('GET', `/api/v1/rooms/${enc(room)}/pins`).then((r) => r.pins);
export const thread = (room, seq, after) => request('GET', msgPath(room, seq) + '/thread' + qs({after}));
export const mentions = (after) => request('GET', '/api/v1/mentions' + qs({after}));
export const search = (q, room) => request('GET', '/api/v1/search' + qs({q, room})).then((r) => r.results);
export const history = (room, q) =>
  request('GET', `/api/v1/rooms/${enc(room)}/messages` + qs(q)).then((r) => r.messages);
// Room settings, roles and moderation.
export const room = (room) => request('GET', `/api/v1/rooms/${enc(room)}`);
export const updateRoom = (room, patch) => request('PATCH', `/api/v1/rooms/${enc(room)}`, {body: patch, idem: requestId()});
const memberPath = (room, user) => `/api/v1/rooms/${enc(room)}/members/${enc(user)}`;
export const setRole = (room, user, role) => request('PUT', memberPath(room, user) + '/role', {body: {role}, idem: requestId()});
// moderate kicks, bans, unbans, mutes or unmutes user; body may hold
// duration (seconds) and reason.
export function moderate(room, user, action, body = {}) {
  const [method, path] = {unban: ['DELETE', 'ban'], unmute: ['DELETE', 'mute']}[action] || ['POST', action];
  return request(method, memberPath(room, user) + '/' + path, {body, idem: requestId()});
}
// Incoming webhooks of a room (owner or admin): the URL, with its secret,
// comes only in createHook's answer.
export const createHook = (room, name) => request('POST', `/api/v1/rooms/${enc(room)}/hooks`, {body: {name}});
export const hooks = (room) => request('GET', `/api/v1/rooms/${enc(room)}/hooks`).then((r) => r.hooks);
export const revokeHook = (room, id) => request('DELETE', `/api/v1/rooms/${enc(room)}/hooks/${enc(id)}`);
// Outgoing webhooks of a room (owner or admin): the signing secret comes
// only in createOutHook's answer.
export const createOutHook = (room, spec) => request('POST', `/api/v1/rooms/${enc(room)}/outgoing-hooks`, {body: spec});
export const outHooks = (room) => request('GET', `/api/v1/rooms/${enc(room)}/outgoing-hooks`).then((r) => r.hooks);
export const deleteOutHook = (room, id) => request('DELETE', `/api/v1/rooms/${enc(room)}/outgoing-hooks/${enc(id)}`);
export const outHookDeliveries = (room, id) => request('GET', `/api/v1/rooms/${enc(room)}/outgoing-hooks/${enc(id)}/deliveries`).then((r) => r.deliveries);
export const invite = (room, username) => request('POST', `/api/v1/rooms/${enc(room)}/invites`, {body: {username}, idem: requestId()});
export const moderation = (room) => request('GET', `/api/v1/rooms/${enc(room)}/moderation`);
// legalHold places (on) or lifts a room's legal hold (admins only) and
// returns the room.
export const legalHold = (room, on) => request(on ? 'PUT' : 'DELETE', `/api/v1/rooms/${enc(room)}/legal-hold`, {idem: requestId()});

// Queues.
export const queues = (waiting) => request('GET', '/api/v1/queues' + qs({waiting: waiting ? 'true' : ''})).then((r) => r.queues);
export const createQueue = (name) => request('POST', '/api/v1/queues', {body: {name}, idem: requestId()});
export const deleteQueue = (q) => request('DELETE', `/api/v1/queues/${enc(q)}`, {idem: requestId()});
export const send = (q, body, to) =>
  request('POST', `/api/v1/queues/${enc(q)}/messages`, {body: to ? {body, to} : {body}, idem: requestId()});
export const peek = (q, from) => request('GET', `/api/v1/queues/${enc(q)}/peek` + qs({from}));
export const receive = (q, from) =>
  request('POST', `/api/v1/queues/${enc(q)}/receive`, {body: from ? {from} : {}, idem: requestId()});

// Links.
export const createLink = (url, code) =>
  request('POST', '/api/v1/links', {body: code ? {url, code} : {url}, idem: requestId()});
export const myLinks = (filter = {}) =>
  request('GET', '/api/v1/links' + qs({mine: 'true', ...filter})).then((r) => r.links);
export const deleteLink = (code) => request('DELETE', `/api/v1/links/${enc(code)}`);
// Personal API tokens: made, listed and revoked with the session; the
// secret comes only in createToken's answer.
export const createToken = (name, scopes, expiresIn) =>
  request('POST', '/api/v1/tokens', {body: expiresIn ? {name, scopes, expires_in: expiresIn} : {name, scopes}});
export const tokens = () => request('GET', '/api/v1/tokens').then((r) => r.tokens);
export const revokeToken = (id) => request('DELETE', `/api/v1/tokens/${enc(id)}`);
export const linkInfo = (code) => request('GET', `/api/v1/links/${enc(code)}`);
export const updateLink = (code, patch) =>
  request('PATCH', `/api/v1/links/${enc(code)}`, {body: patch, idem: requestId()});
export const linkStats = (code, days) => request('GET', `/api/v1/links/${enc(code)}/stats` + qs({days}));
export const linkQR = (code, format) =>
  request('GET', `/api/v1/links/${enc(code)}/qr` + qs({format}), {bytes: true}).then((r) => r.bytes);

// KV. Values are bytes. Writes are compare-and-swap: kvPut stores over
// version only (412 when the key changed since), or with version 0 only
// when the key does not exist yet (412 when it does); kvDelete likewise.
// kvGet's version and modified are null when the browser hides the
// answer's headers (another node's: CORS does not expose them).
const kvPath = (key) => '/api/v1/kv/' + enc(key);
export const kvList = (prefix, after, limit) =>
  request('GET', '/api/v1/kv' + qs({prefix, after, limit})).then((r) => r.keys);
export async function kvGet(key) {
  const r = await request('GET', kvPath(key), {bytes: true});
  const num = (name) => (r.headers.get(name) === null ? null : Number(r.headers.get(name)));
  return {bytes: r.bytes, version: num('X-Parley-Version'), modified: num('X-Parley-Modified-Ms')};
}
export const kvPut = (key, value, version) => request('PUT', kvPath(key), {raw: value, idem: requestId(),
  headers: version ? {'If-Match': String(version)} : {'If-None-Match': '*'}}).then((r) => r.version);
export const kvDelete = (key, version) =>
  request('DELETE', kvPath(key), {idem: requestId(), headers: {'If-Match': String(version)}});
// kvHistory is the kept versions of key, oldest first: {key, revision,
// versions: [{type, key, revision, version, modified_ms, value (base64)}]}.
export const kvHistory = (key) => request('GET', kvPath(key) + '?history');

// kvWatch follows the keys starting with prefix (Server-Sent Events read
// through fetch, which can send the token in a header, unlike EventSource)
// from the resume token after ('' for now): onReady(token) once, then
// onChange({partition, revision, events, token}) per revision. It resolves
// when the stream ends or signal aborts, and rejects with an ApiError for an
// error event or answer (history_compacted: start again from now).
export async function kvWatch(prefix, after, signal, onReady, onChange) {
  const s = session();
  const headers = {Accept: 'text/event-stream'};
  if (s) headers.Authorization = 'Bearer ' + s.token;
  const origin = nodes.current();
  let res;
  try {
    const q = new URLSearchParams({prefix: prefix || ''});
    if (after) q.set('after', after);
    res = await fetch(origin + '/api/v1/kv/watch?' + q, {headers, signal, cache: 'no-store'});
  } catch (e) {
    if (signal.aborted) return;
    nodes.failed(origin);
    throw new ApiError(0, 'network', 'Cannot reach the server: ' + e.message, true);
  }
  if (!res.ok) {
    const data = await res.json().catch(() => null);
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || 'http_' + res.status, err.message || res.statusText, !!err.retryable);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    let chunk;
    try { chunk = await reader.read(); } catch (e) { if (signal.aborted) return; throw new ApiError(0, 'network', 'The watch was cut: ' + e.message, true); }
    if (chunk.done) return;
    buf += chunk.value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = '';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (!event) continue; // a comment (keep-alive)
      const msg = JSON.parse(data);
      if (event === 'ready') onReady(msg.token);
      else if (event === 'kv') onChange(msg);
      else if (event === 'error') throw new ApiError(msg.code === 'history_compacted' ? 410 : 503, msg.code, msg.message, msg.code !== 'history_compacted');
    }
  }
}

// Cluster. Every map read also refreshes the failover candidates.
export const cluster = () => request('GET', '/api/v1/cluster').then((c) => { nodes.learn(c.nodes); return c; });
export const refreshNodes = () => cluster().then(() => {}, () => {});
export const clusterStats = () => request('GET', '/api/v1/cluster/stats');
export const clusterEvents = () => request('GET', '/api/v1/cluster/events');

// stream.js: the live event stream (WebSocket GET /api/v1/stream) with
// automatic reconnect and resume.
//
// The token goes in the first frame, never in the URL. Each subscribed room
// remembers the last seq delivered; after a disconnect the stream
// reconnects with backoff and resubscribes with after=that seq, so no event
// is skipped or shown twice. The stream uses the node the API calls use
// (nodes.js: the page's own first, then the members last seen alive); when
// that node keeps failing the stream moves on to the next (every node
// accepts the cluster's advertised addresses as origins).

import * as nodes from './nodes.js';

const MAX_BACKOFF_MS = 10000;
const FAILURES_BEFORE_MOVING = 2;

// Stream delivers frames to listeners added with on(name, fn):
//   'event' (event)          an event frame newer than the room's last seq
//   'ready' (room, seq)      everything up to seq has been delivered (live(room) is now true)
//   'presence' (frame)       {room, username, online}
//   'mention' (frame)        {room, seq, ts, sender}: someone mentioned me, in any room
//   'typing' (frame)         {room, username}: a member is typing
//   'error' (frame)          {room, code, message} (history_compacted, forbidden, not_found)
//   'unauthorized' (frame)   the session ended (signed out, revoked, expired): the stream stops for good
//   'state' (state, host)    'connecting' | 'live' | 'down', and the node in use (host:port)
export class Stream {
  // token signs the stream in.
  constructor(token) {
    this.token = token;
    this.listeners = new Map();
    this.rooms = new Map(); // room -> last seq delivered (undefined: from now)
    this.ready = new Set(); // rooms subscribed on the current connection (their ready frame came)
    this.origin = nodes.current(); // the node of the current connection
    this.failures = 0;
    this.closed = false;
    this.ws = null;
    this.timer = null;
    this.state = '';
    this.connect();
  }

  // on adds a listener and returns a function that removes it.
  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.listeners.get(name).delete(fn);
  }

  emit(name, ...args) {
    for (const fn of this.listeners.get(name) || []) fn(...args);
  }

  // typing tells room's subscribers that I am typing (the server drops
  // more than one a second).
  typing(room) {
    this.send({type: 'typing', room});
  }

  // subscribe follows room from after (the last seq the caller has); with
  // after undefined, from now.
  subscribe(room, after) {
    this.rooms.set(room, after);
    this.ready.delete(room);
    this.sendSubscribe(room);
  }

  // live reports whether room's events arrive over the stream now: the
  // connection is up and the server confirmed the subscription.
  live(room) {
    return this.state === 'live' && this.ready.has(room);
  }

  // seen records that the caller has room's events up to seq from
  // elsewhere (history polling), so a resume starts after them.
  seen(room, seq) {
    if (!this.rooms.has(room)) return;
    const last = this.rooms.get(room);
    if (last === undefined || seq > last) this.rooms.set(room, seq);
  }

  // unsubscribe stops following room.
  unsubscribe(room) {
    this.rooms.delete(room);
    this.ready.delete(room);
    this.send({type: 'unsubscribe', room});
  }

  // close stops the stream for good.
  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, 'bye');
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.emit('state', state, new URL(this.origin).host);
  }

  send(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  sendSubscribe(room) {
    const after = this.rooms.get(room);
    this.send(after === undefined ? {type: 'subscribe', room} : {type: 'subscribe', room, after});
  }

  connect() {
    if (this.closed) return;
    this.origin = nodes.current();
    this.setState('connecting');
    let ws;
    try {
      ws = new WebSocket(nodes.wsURL(this.origin, '/api/v1/stream'));
    } catch (e) {
      this.retry();
      return;
    }
    this.ws = ws;
    this.ready.clear();
    let heard = false; // a connection that closes before any frame counts as a failure
    ws.onopen = () => {
      this.send({type: 'auth', token: this.token});
      for (const room of this.rooms.keys()) this.sendSubscribe(room);
    };
    ws.onmessage = (m) => {
      heard = true;
      this.failures = 0;
      this.setState('live');
      let f;
      try { f = JSON.parse(m.data); } catch (e) { return; }
      this.dispatch(f);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.ready.clear();
      if (!heard) this.failures++;
      this.retry();
    };
    ws.onerror = () => { /* onclose follows and retries */ };
  }

  dispatch(f) {
    switch (f.type) {
      case 'event': {
        const last = this.rooms.get(f.room);
        if (!this.rooms.has(f.room) || (last !== undefined && f.seq <= last)) return;
        this.rooms.set(f.room, f.seq);
        this.emit('event', f);
        break;
      }
      case 'ready':
        if (!this.rooms.has(f.room)) return;
        if (this.rooms.get(f.room) === undefined) this.rooms.set(f.room, f.seq);
        this.ready.add(f.room);
        this.emit('ready', f.room, f.seq);
        break;
      case 'presence':
        this.emit('presence', f);
        break;
      case 'mention': // someone mentioned me, in any room
        this.emit('mention', f);
        break;
      case 'typing':
        this.emit('typing', f);
        break;
      case 'error':
        // unauthorized (the connection's): the session ended and the server
        // closes (4001); reconnecting cannot help, so stop for good.
        if (f.code === 'unauthorized' && !f.room) {
          this.close();
          this.emit('unauthorized', f);
          break;
        }
        // slow_consumer: the server closes and we resume from the last seq.
        if (f.code !== 'slow_consumer') {
          if (f.room) { this.rooms.delete(f.room); this.ready.delete(f.room); }
          this.emit('error', f);
        }
        break;
    }
  }

  // retry reconnects after a backoff, moving to another node when this one
  // keeps failing (or the API calls already left it).
  retry() {
    if (this.closed) return;
    this.setState('down');
    if (this.failures >= FAILURES_BEFORE_MOVING) {
      nodes.failed(this.origin);
      if (nodes.candidates().length > 1) this.failures = 0;
    }
    const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(this.failures, 5));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), backoff / 2 + Math.random() * backoff / 2);
  }
}

// views/jump.js: opening a room view at one message (a search result, a
// pin, a notification) with the messages around it, the message
// highlighted for a moment.
//
// The room view normally shows the end of the room: a run of events up to
// the newest, which the stream extends. A jump far back loads a window
// around the message instead (GET …/messages?before=SEQ+1 and ?after=SEQ),
// and the view is "detached" while newer events exist beyond the window:
// the stream still runs, but new messages are only counted on the "new
// messages" pill (changes to messages in the window are drawn at once).
// Scrolling down loads the newer pages; when the last one comes, or the
// pill is clicked, the view joins the end again and the stream resumes from
// the last seq shown, so nothing is skipped or shown twice.

import * as api from '../api.js';
import {isChange} from './events.js';

// HALF is how many events are loaded on each side of the message.
const HALF = 25;
// PAGE is how many newer events one scroll down loads.
const PAGE = 50;
// GLOW_MS is how long the message stays highlighted.
const GLOW_MS = 3000;

// to shows message seq of room view v in context and highlights it: where
// it is already in the list, by scrolling; otherwise the window around it
// replaces the list.
export async function to(v, seq) {
  if (v.stopped) return false;
  const here = '#/room/' + encodeURIComponent(v.room);
  if (location.hash !== here) history.replaceState(null, '', here); // a reload shows the end; the same link jumps again
  if (!v.seqs.get(seq)) {
    let older, newer;
    try {
      [older, newer] = await Promise.all([
        api.history(v.room, {before: seq + 1, limit: HALF}),
        api.history(v.room, {after: seq, limit: HALF}),
      ]);
    } catch (e) {
      v.ctx.notify('Cannot show that message: ' + e.message, 'error');
      return false;
    }
    if (!older.some((ev) => ev.seq === seq)) {
      v.ctx.notify('That message is no longer in the room\'s history.', 'info');
      return false;
    }
    replaceWindow(v, older, newer);
  }
  const el = v.seqs.get(seq);
  if (!el) return false;
  el.scrollIntoView({block: 'center'});
  v.stuck = false;
  glow(el);
  return true;
}

// replaceWindow makes the events older (ending with the message) and newer
// the whole list.
function replaceWindow(v, older, newer) {
  v.seqs.clear();
  v.list.replaceChildren();
  v.first = older[0].seq;
  v.contiguous = (newer.length ? newer[newer.length - 1] : older[older.length - 1]).seq;
  v.hasOlder = older.length === HALF && v.first > 1;
  v.older.hidden = !v.hasOlder;
  v.detached = newer.length === HALF;
  v.held = 0;
  v.view.add([...older, ...newer]);
  v.view.divider();
  pill(v);
  // At the end already: what the stream brought while the window loaded
  // went with the old list, so it resumes after the window.
  if (!v.detached && v.stream.live(v.room)) attach(v);
}

// glow highlights el for a moment.
function glow(el) {
  el.classList.remove('jumped');
  void el.offsetWidth; // restart the animation when it is already running
  el.classList.add('jumped');
  setTimeout(() => el.classList.remove('jumped'), GLOW_MS);
}

// held reports whether a live event is kept out of a detached view: a new
// message is counted on the pill, a change to a message in the window is
// drawn at once. The events come again when the view joins the end.
export function held(v, ev) {
  if (!v.detached) return false;
  if (isChange(ev)) {
    if (ev.current) v.view.redraw(ev.current); // in the window, or a pin in the pins panel
  } else if (ev.kind === 'message' || ev.kind === 'whisper') {
    v.held = (v.held || 0) + 1;
    pill(v);
  }
  return true;
}

// fit returns the events that continue a detached view's window (the
// window itself, a page of newer events): any other is held back, and a
// message of mine, just sent, takes the view to the newest messages.
export function fit(v, events) {
  if (!v.detached) return events;
  let next = v.contiguous + 1;
  const kept = [];
  for (const ev of [...events].sort((a, b) => a.seq - b.seq)) {
    if (ev.seq <= next) {
      kept.push(ev);
      next = Math.max(next, ev.seq + 1);
    } else if (!isChange(ev) && ev.sender && ev.sender.toLowerCase() === v.me.toLowerCase()) {
      latest(v);
      return kept;
    } else {
      held(v, ev);
    }
  }
  return kept;
}

// pill shows the detached view's way back to the newest messages.
function pill(v) {
  if (!v.detached) return;
  v.pill.textContent = v.held ? `${v.held} new message${v.held === 1 ? '' : 's'} · Jump to the newest ↓` : 'Jump to the newest ↓';
  v.pill.hidden = false;
}

// newer loads the next page after the window when a detached view is
// scrolled to its bottom, joining the end with the last page.
export async function newer(v) {
  if (!v.detached || v.loadingNewer) return;
  v.loadingNewer = true;
  try {
    const page = await api.history(v.room, {after: v.contiguous, limit: PAGE});
    if (!v.detached) return;
    v.view.add(page);
    if (page.length < PAGE) attach(v);
  } catch (e) {
    v.ctx.notify('Cannot load newer messages: ' + e.message, 'error');
  } finally {
    v.loadingNewer = false;
  }
}

// latest leaves a detached view for the newest messages.
export async function latest(v) {
  v.detached = false;
  if (await v.view.latest()) attach(v);
}

// attach follows the end again: the stream resumes after the last seq
// shown, bringing what was held back.
function attach(v) {
  v.detached = false;
  v.held = 0;
  v.pill.textContent = 'New messages ↓';
  v.pill.hidden = true;
  v.stream.subscribe(v.room, v.contiguous);
}

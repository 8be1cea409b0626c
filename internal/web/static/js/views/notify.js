// views/notify.js: what a mention of me does outside the room I am reading.
// The page's title counts the mentions not seen yet ("(2) Parley"), room by
// room until I open the room with the tab in view; and, once I turn them on
// with the bell in the top bar, a desktop notification shows each mention
// that arrives while the tab is hidden. The browser's permission is asked
// for only when the bell is clicked, never on page load, and never again
// once it was refused. Notifications are on only while the bell is on (a
// choice kept in this browser) and the browser allows them.

import * as api from '../api.js';
import {h, replace} from '../dom.js';
import {bellIcon} from './icons.js';

const PREF_KEY = 'parley.notifications';
const TITLE = 'Parley';

// mentionNotices follows the mention frames of stream for the signed-in
// user me() and puts the bell in the top bar's user area, who. It returns a
// function that stops it.
export function mentionNotices(stream, me, who) {
  const n = {unseen: new Map(), me}; // room -> mentions not seen yet
  n.button = h('button', {type: 'button', class: 'link-button notify-toggle', onclick: () => toggle(n)});
  if (typeof Notification === 'undefined') n.button.hidden = true;
  who.prepend(n.button);
  drawButton(n);
  watchPermission(n);
  const seen = () => { n.unseen.delete(viewedRoom()); drawTitle(n); };
  const offMention = stream.on('mention', (f) => mentioned(n, f));
  document.addEventListener('visibilitychange', seen);
  window.addEventListener('hashchange', seen);
  return () => {
    offMention();
    document.removeEventListener('visibilitychange', seen);
    window.removeEventListener('hashchange', seen);
    n.button.remove();
    document.title = TITLE;
  };
}

// viewedRoom is the room on screen: the room view's, with the tab in view.
function viewedRoom() {
  const m = /^#\/room\/([^/]+)/.exec(location.hash);
  return m && !document.hidden ? decodeURIComponent(m[1]).toLowerCase() : '';
}

// enabled reports whether notifications are on: turned on here and
// allowed by the browser.
const enabled = () => typeof Notification !== 'undefined' && Notification.permission === 'granted' &&
  localStorage.getItem(PREF_KEY) === 'on';

// mentioned counts a mention outside the room on screen and shows a
// desktop notification when the tab is hidden.
async function mentioned(n, f) {
  if (f.sender && n.me() && f.sender.toLowerCase() === n.me().toLowerCase()) return;
  if (viewedRoom() === f.room) return;
  n.unseen.set(f.room, (n.unseen.get(f.room) || 0) + 1);
  drawTitle(n);
  if (!document.hidden || !enabled()) return;
  let body = '';
  try {
    body = ((await api.message(f.room, f.seq)).text || '').slice(0, 200);
  } catch (e) { /* the notification goes without the text */ }
  const note = new Notification(`${f.sender} mentioned you in #${f.room}`, {body, tag: `${f.room}/${f.seq}`, icon: '/favicon.svg'});
  note.onclick = () => {
    window.focus();
    location.hash = `#/room/${encodeURIComponent(f.room)}/${f.seq}`;
    note.close();
  };
}

// watchPermission redraws the bell when the browser's permission changes
// (in its site settings, say).
async function watchPermission(n) {
  try {
    const status = await navigator.permissions.query({name: 'notifications'});
    status.onchange = () => drawButton(n);
  } catch (e) { /* the bell is drawn again when clicked */ }
}

function drawTitle(n) {
  let total = 0;
  for (const c of n.unseen.values()) total += c;
  document.title = total ? `(${total}) ${TITLE}` : TITLE;
}

// toggle turns notifications on (the browser asks the user the first time;
// once allowed it answers at once) or off.
async function toggle(n) {
  if (enabled()) {
    localStorage.removeItem(PREF_KEY);
  } else if (Notification.permission !== 'denied' && await Notification.requestPermission() === 'granted') {
    localStorage.setItem(PREF_KEY, 'on');
  }
  drawButton(n);
}

// drawButton shows the bell as notifications are: on, off, or blocked in
// the browser's settings (which only the user can change there).
function drawButton(n) {
  if (typeof Notification === 'undefined') return;
  const on = enabled();
  const blocked = Notification.permission === 'denied';
  const label = on ? 'Notifications on' : blocked ? 'Notifications blocked' : 'Turn on notifications';
  n.button.title = on ? 'Desktop notifications of mentions are on; click to turn them off'
    : blocked ? 'This browser blocks notifications from Parley: allow them in the site settings'
      : 'Show a desktop notification when someone mentions you while Parley is in the background';
  n.button.setAttribute('aria-pressed', on ? 'true' : 'false');
  n.button.dataset.state = on ? 'on' : blocked ? 'blocked' : 'off';
  const bell = bellIcon(label, on);
  bell.setAttribute('aria-hidden', 'true'); // the label names the button
  replace(n.button, bell, h('span', {class: 'notify-label'}, label));
}

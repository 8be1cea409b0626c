// views/emoji.js: the reaction picker opened from a message's hover menu: a
// grid of common emoji with their shortcode names, a filter that also takes
// any :shortcode: (the server accepts 1 to 32 of a-z 0-9 _ + - between
// colons and keeps it as it is), and the keyboard: arrows move in the grid,
// Enter picks, Esc closes and gives the focus back. Reactions are content,
// emoji by nature, so the picker's symbols are emoji (escaped in the source,
// which the source check requires); the app's own symbols stay SVG icons.

import {h, replace} from '../dom.js';
import {focusMessage} from './keys.js';

// EMOJI are the picker's emoji and their shortcode names, most used first.
export const EMOJI = [
  ['\u{1F44D}', 'thumbsup'], ['\u2764\uFE0F', 'heart'], ['\u{1F602}', 'joy'], ['\u{1F389}', 'tada'],
  ['\u{1F440}', 'eyes'], ['\u{1F64F}', 'pray'], ['\u{1F525}', 'fire'], ['\u{1F680}', 'rocket'],
  ['\u2705', 'white_check_mark'], ['\u{1F44E}', 'thumbsdown'], ['\u{1F44F}', 'clap'], ['\u{1F4AF}', '100'],
  ['\u{1F914}', 'thinking'], ['\u{1F60A}', 'blush'], ['\u{1F603}', 'smiley'], ['\u{1F605}', 'sweat_smile'],
  ['\u{1F622}', 'cry'], ['\u{1F62E}', 'open_mouth'], ['\u{1F621}', 'rage'], ['\u{1F60D}', 'heart_eyes'],
  ['\u{1F60E}', 'sunglasses'], ['\u{1F643}', 'upside_down_face'], ['\u{1F644}', 'roll_eyes'], ['\u{1F44B}', 'wave'],
  ['\u{1F4AA}', 'muscle'], ['\u{1F64C}', 'raised_hands'], ['\u{1F91D}', 'handshake'], ['\u{1F44C}', 'ok_hand'],
  ['\u2B50', 'star'], ['\u2728', 'sparkles'], ['\u{1F4A1}', 'bulb'], ['\u{1F41B}', 'bug'],
  ['\u{1F6A7}', 'construction'], ['\u26A0\uFE0F', 'warning'], ['\u2753', 'question'], ['\u274C', 'x'],
  ['\u{1F4CC}', 'pushpin'], ['\u{1F4DD}', 'memo'], ['\u2615', 'coffee'], ['\u{1F382}', 'birthday'],
];

// COLUMNS is the grid's width, which the arrow keys follow.
const COLUMNS = 8;

// SHORTCODE is a reaction written as a shortcode, as the server accepts it.
const SHORTCODE = /^:[a-z0-9_+-]{1,32}:$/;

// emojiFor shows a reaction: a known :shortcode: as its emoji, anything
// else as it is.
export function emojiFor(reaction) {
  const known = SHORTCODE.test(reaction) && EMOJI.find(([, name]) => name === reaction.slice(1, -1));
  return known ? known[0] : reaction;
}

let current = null; // the open picker: {el, close}

// pickReaction opens the picker by button; onPick(emoji) adds the reaction
// and its rejection is shown in the picker, which stays open.
export function pickReaction(button, onPick) {
  if (current) current.close(false);
  const p = {button, onPick};
  p.filter = h('input', {type: 'search', name: 'emoji-filter', autocomplete: 'off', spellcheck: false, maxlength: 34,
    placeholder: 'Search, or type a :shortcode:', 'aria-label': 'Search emoji or type a :shortcode:'});
  p.grid = h('div', {class: 'emoji-grid', role: 'group', 'aria-label': 'Emoji'});
  p.note = h('div', {class: 'form-error', role: 'alert', hidden: true});
  p.el = h('div', {class: 'emoji-picker', role: 'dialog', 'aria-label': 'Add a reaction'}, p.filter, p.grid, p.note);
  p.close = (refocus = true) => close(p, refocus);
  p.filter.addEventListener('input', () => fill(p));
  p.filter.addEventListener('keydown', (e) => filterKey(p, e));
  p.grid.addEventListener('keydown', (e) => gridKey(p, e));
  p.el.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); p.close(); } });
  p.outside = (e) => { if (!p.el.contains(e.target) && !button.contains(e.target)) p.close(false); };
  document.addEventListener('pointerdown', p.outside, true);
  p.msg = button.closest('.msg');
  p.list = p.msg && p.msg.parentElement; // the list stays when the message is drawn again
  if (p.msg) p.msg.classList.add('picking'); // its hover menu stays, so the focus can go back to the button
  fill(p);
  document.body.append(p.el);
  place(p);
  current = p;
  p.filter.focus();
  return p;
}

// fill shows the emoji whose name holds the filter's text, and the
// shortcode typed when it is none of them.
function fill(p) {
  const raw = p.filter.value.trim().toLowerCase();
  const q = raw.replace(/^:|:$/g, '');
  const shown = EMOJI.filter(([, name]) => name.includes(q));
  const typed = `:${q}:`;
  // A shortcode is offered when one is typed (from its colon) or no name matches.
  const extra = q && SHORTCODE.test(typed) && (raw.startsWith(':') || !shown.length) && !shown.some(([, name]) => name === q) ? [[typed, q]] : [];
  const items = [...shown, ...extra].map(([emoji, name], i) => h('button', {type: 'button',
    class: 'emoji' + (emoji === typed ? ' shortcode' : ''), title: `:${name}:`, 'aria-label': name.replace(/_/g, ' '),
    'data-emoji': emoji, tabindex: i === 0 ? '0' : '-1', onclick: () => pick(p, emoji)}, emoji));
  replace(p.grid, items.length ? items : h('p', {class: 'muted small'}, 'No emoji by that name. A shortcode is a-z, 0-9, _, + and - between colons.'));
}

async function pick(p, emoji) {
  p.note.hidden = true;
  try {
    await p.onPick(emoji);
    p.close();
  } catch (e) {
    p.note.textContent = 'Cannot react: ' + e.message;
    p.note.hidden = false;
  }
}

// filterKey: Enter picks the first emoji shown, ↓ moves into the grid.
function filterKey(p, e) {
  const first = p.grid.querySelector('button');
  if (e.key === 'Enter' && !e.isComposing) {
    e.preventDefault();
    if (first) pick(p, first.dataset.emoji);
  } else if (e.key === 'ArrowDown' && first) {
    e.preventDefault();
    first.focus();
  }
}

// gridKey moves the focus in the grid with the arrows, Home and End (the
// grid is one tab stop: the focused emoji).
function gridKey(p, e) {
  const buttons = [...p.grid.querySelectorAll('button')];
  const i = buttons.indexOf(document.activeElement);
  if (i < 0) return;
  const to = {ArrowRight: i + 1, ArrowLeft: i - 1, ArrowDown: i + COLUMNS, ArrowUp: i - COLUMNS, Home: 0, End: buttons.length - 1}[e.key];
  if (to === undefined) return;
  e.preventDefault();
  if (to < 0) { if (e.key === 'ArrowUp') p.filter.focus(); return; }
  const next = buttons[Math.min(to, buttons.length - 1)];
  for (const b of buttons) b.tabIndex = b === next ? 0 : -1;
  next.focus();
}

// place puts the picker by its button, inside the screen (CSS makes it a
// sheet at the bottom on a phone).
function place(p) {
  // The hover menu hides once the pointer leaves the message: a hidden
  // button (opened by keyboard or script) places the picker by its message.
  const anchor = p.button.getClientRects().length ? p.button : p.msg || p.button;
  const r = anchor.getBoundingClientRect();
  const w = p.el.offsetWidth, ht = p.el.offsetHeight;
  const top = r.bottom + 4 + ht <= innerHeight ? r.bottom + 4 : Math.max(4, r.top - 4 - ht);
  p.el.style.top = top + 'px';
  p.el.style.left = Math.max(4, Math.min(r.right - w, innerWidth - w - 4)) + 'px';
}

function close(p, refocus) {
  if (current !== p) return;
  current = null;
  document.removeEventListener('pointerdown', p.outside, true);
  p.el.remove();
  if (refocus && p.button.isConnected) {
    p.button.focus(); // before the menu may hide: it stays while focused
  } else if (refocus && p.list) { // the message was drawn again meanwhile: back to it
    const again = p.list.querySelector(`:scope > [data-seq="${p.msg.dataset.seq}"]`);
    if (again) focusMessage(again);
  }
  if (p.msg) p.msg.classList.remove('picking');
}

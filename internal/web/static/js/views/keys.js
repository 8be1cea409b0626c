// views/keys.js: the room's messages by keyboard. The list is one tab
// stop; there ↑ and ↓ (Home, End) move from message to message, a
// message's hover menu shows while it has the focus, so Tab reaches its
// reactions and actions (react, the emoji picker, reply, edit, pin,
// delete); Esc goes back to the composer. (In the composer, ↑ edits my
// last message and Esc cancels an edit: room.js.)

// mount makes the messages of room view v reachable by keyboard.
export function mount(v) {
  v.scroller.tabIndex = 0;
  v.scroller.setAttribute('aria-label', `Messages in #${v.room}: arrow keys move between them`);
  v.scroller.addEventListener('keydown', (e) => move(v, e));
}

// move handles a key pressed on the list or a message in it.
function move(v, e) {
  if (e.target !== v.scroller && !e.target.matches('.events > .msg')) return; // a button or link inside keeps its keys
  const msgs = [...v.list.querySelectorAll(':scope > .msg')];
  const at = msgs.indexOf(e.target);
  const last = msgs.length - 1;
  const to = {ArrowUp: at < 0 ? last : at - 1, ArrowDown: at < 0 ? last : at + 1, Home: 0, End: last}[e.key];
  if (e.key === 'Escape') {
    e.preventDefault();
    v.input.focus();
    return;
  }
  if (to === undefined || !msgs.length) return;
  e.preventDefault();
  focusMessage(msgs[Math.max(0, Math.min(last, to))]);
}

// focusMessage gives a message the focus (scrolling it into view).
export function focusMessage(el, opts) {
  el.tabIndex = -1;
  el.focus(opts);
}

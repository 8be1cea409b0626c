// views/side.js: the room view's side panels (a thread, the pinned
// messages, the room's search) share one place beside the messages, as in
// Mattermost's right-hand side: opening one closes the others.

// only hides every side panel of room view v but keep (an element).
export function only(v, keep) {
  const t = v.threadState;
  if (t && t.el !== keep && !t.el.hidden) { t.root = 0; t.el.hidden = true; }
  for (const p of [v.pins, v.finder]) {
    if (p && p.el !== keep && !p.el.hidden) { p.el.hidden = true; p.button.setAttribute('aria-expanded', 'false'); }
  }
}

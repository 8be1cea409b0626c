// dom.js: small helpers to build the page without innerHTML, so text from
// users (messages, names, URLs) is never parsed as markup.

// h builds an element: h('a', {href: '#/x', class: 'c', onclick: fn}, 'text', child...).
// Attributes starting with "on" become event listeners; null and false
// attributes and children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.className = v;
    } else if (k in el && typeof v !== 'string') {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : v);
    }
  }
  append(el, children);
  return el;
}

// append adds children (strings, nodes or nested arrays) to el.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// replace empties el and puts children in it.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// shortLabel shows a short URL without its scheme: "s.example/abc" or
// "par.ly/s/abc".
export function shortLabel(url) {
  return url.replace(/^https?:\/\//, '');
}

// fmtTime shows a Unix ms time as a clock time today, or a date and time.
export function fmtTime(ms) {
  const d = new Date(ms);
  const now = new Date();
  const time = d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  if (d.toDateString() === now.toDateString()) return time;
  return d.toLocaleDateString([], {month: 'short', day: 'numeric'}) + ' ' + time;
}

// Errors go once they are stale: a field's when the field is edited, a
// form's when any of its fields is (a view that checks as the user types
// may show a new one at once), and all of a form's when it succeeds
// (clearErrors).
const clearsOnEdit = new WeakSet();
function clearOnEdit(el, clear) {
  if (clearsOnEdit.has(el)) return;
  clearsOnEdit.add(el);
  el.addEventListener('input', clear);
}

// fieldError shows msg under an input (or clears it when msg is empty) and
// marks the input invalid for assistive technology. Editing the input
// clears it.
export function fieldError(input, msg) {
  let note = input.parentElement.querySelector('.field-error');
  if (!note) {
    note = h('div', {class: 'field-error', role: 'alert'});
    input.parentElement.append(note);
  }
  note.textContent = msg || '';
  note.hidden = !msg;
  input.setAttribute('aria-invalid', msg ? 'true' : 'false');
  if (msg) clearOnEdit(input, () => { if (input.getAttribute('aria-invalid') === 'true') fieldError(input, ''); });
}

// formError shows msg in a form's error line (created on first use).
// Editing any field of the form clears it.
export function formError(form, msg) {
  let note = form.querySelector('.form-error');
  if (!note) {
    note = h('div', {class: 'form-error', role: 'alert'});
    form.prepend(note);
  }
  note.textContent = msg || '';
  note.hidden = !msg;
  if (msg) clearOnEdit(form, () => formError(form, ''));
}

// clearErrors takes every error shown in form away: call it when the form
// succeeded.
export function clearErrors(form) {
  for (const note of form.querySelectorAll('.field-error, .form-error')) {
    note.textContent = '';
    note.hidden = true;
  }
  for (const input of form.querySelectorAll('[aria-invalid=true]')) input.setAttribute('aria-invalid', 'false');
}

// field is a labelled input (or textarea, with tag); extra attributes go
// to the input. Its error (fieldError) goes as soon as it is edited, before
// the view's own input listeners run.
export function field(label, attrs, tag = 'input') {
  const input = h(tag, attrs);
  clearOnEdit(input, () => { if (input.getAttribute('aria-invalid') === 'true') fieldError(input, ''); });
  return {input, el: h('label', {class: 'field'}, h('span', {class: 'label'}, label), input)};
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// svg builds an SVG element as h builds an HTML one (attributes and
// children only).
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v === true ? '' : v);
  }
  return append(el, children);
}

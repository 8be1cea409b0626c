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

// fmtTime shows a Unix ms time as a clock time today, or a date and time.
export function fmtTime(ms) {
  const d = new Date(ms);
  const now = new Date();
  const time = d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  if (d.toDateString() === now.toDateString()) return time;
  return d.toLocaleDateString([], {month: 'short', day: 'numeric'}) + ' ' + time;
}

// fieldError shows msg under an input (or clears it when msg is empty) and
// marks the input invalid for assistive technology.
export function fieldError(input, msg) {
  let note = input.parentElement.querySelector('.field-error');
  if (!note) {
    note = h('div', {class: 'field-error', role: 'alert'});
    input.parentElement.append(note);
  }
  note.textContent = msg || '';
  note.hidden = !msg;
  input.setAttribute('aria-invalid', msg ? 'true' : 'false');
}

// formError shows msg in a form's error line (created on first use).
export function formError(form, msg) {
  let note = form.querySelector('.form-error');
  if (!note) {
    note = h('div', {class: 'form-error', role: 'alert'});
    form.prepend(note);
  }
  note.textContent = msg || '';
  note.hidden = !msg;
}

// field is a labelled input; extra attributes go to the input.
export function field(label, attrs) {
  const input = h('input', attrs);
  return {input, el: h('label', {class: 'field'}, h('span', {class: 'label'}, label), input)};
}

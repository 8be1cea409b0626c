// markdown.js: the message formatting, a Markdown subset built straight
// into DOM nodes (never HTML): **bold**, *italic* or _italic_, ~~strike~~,
// `inline code`, ``` code blocks ```, > quotes, - or 1. lists, and http(s)
// URLs made links that open apart (rel="noopener noreferrer"). @names are
// marked. Anything else is text: no raw HTML ever reaches the page.

import {h} from './dom.js';

// render returns the nodes of a message's text.
export function render(text, me) {
  const out = [];
  let para = []; // plain lines, kept as one paragraph with its line breaks
  const flush = () => {
    if (para.length) out.push(h('p', {}, para.flatMap((l, j) => (j ? ['\n', ...inline(l, me)] : inline(l, me)))));
    para = [];
  };
  const lines = String(text).split('\n');
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (/^```|^>\s?|^\s*([-*]|\d+\.)\s+/.test(line)) flush();
    if (/^```/.test(line)) { // a code block, to its closing fence or the end
      const code = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) code.push(lines[i]);
      i++;
      out.push(h('pre', {class: 'md-code'}, h('code', {}, code.join('\n'))));
      continue;
    }
    let m;
    if (/^>\s?/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^>\s?/.test(lines[i]); i++) quoted.push(lines[i].replace(/^>\s?/, ''));
      out.push(h('blockquote', {}, render(quoted.join('\n'), me)));
      continue;
    }
    if ((m = /^\s*([-*]|\d+\.)\s+/.exec(line))) {
      const ordered = /\d/.test(m[1]);
      const items = [];
      for (; i < lines.length && (m = /^\s*([-*]|\d+\.)\s+(.*)$/.exec(lines[i])) && /\d/.test(m[1]) === ordered; i++) {
        items.push(h('li', {}, inline(m[2], me)));
      }
      out.push(h(ordered ? 'ol' : 'ul', {class: 'md-list'}, items));
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return out;
}

// Inline spans, tried in this order at each position.
const SPANS = [
  {re: /^`([^`]+)`/, make: (m) => h('code', {}, m[1])},
  {re: /^\*\*(?=\S)([\s\S]*?\S)\*\*/, make: (m, me) => h('strong', {}, inline(m[1], me))},
  {re: /^~~(?=\S)([\s\S]*?\S)~~/, make: (m, me) => h('s', {}, inline(m[1], me))},
  {re: /^\*(?=\S)([^*]*?\S)\*/, make: (m, me) => h('em', {}, inline(m[1], me))},
  {re: /^_(?=\S)([^_]*?\S)_(?![A-Za-z0-9])/, make: (m, me) => h('em', {}, inline(m[1], me))},
  {re: /^https?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/, make: (m) => link(m[0])},
  {re: /^@([A-Za-z0-9_.-]*[A-Za-z0-9_-])/, make: (m, me) => h('span', {class: 'mention' + (isMe(m[1], me) ? ' me' : '')}, m[0])},
];

function isMe(name, me) {
  const n = name.toLowerCase();
  return n === 'room' || n === 'here' || (me && n === me.toLowerCase());
}

// link is an http(s) URL as a link that opens apart; anything the URL
// parser refuses stays text.
function link(url) {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return url;
  } catch (e) {
    return url;
  }
  return h('a', {href: url, target: '_blank', rel: 'noopener noreferrer'}, url);
}

// inline returns the nodes of one line's spans.
function inline(s, me) {
  const out = [];
  let text = '';
  for (let i = 0; i < s.length;) {
    const rest = s.slice(i);
    const boundary = i === 0 || !/[A-Za-z0-9]/.test(s[i - 1]);
    let matched = false;
    for (const span of SPANS) {
      if (!boundary && span.re.source.startsWith('^@')) continue;
      const m = span.re.exec(rest);
      if (!m) continue;
      if (text) { out.push(text); text = ''; }
      out.push(span.make(m, me));
      i += m[0].length;
      matched = true;
      break;
    }
    if (!matched) { text += s[i]; i++; }
  }
  if (text) out.push(text);
  return out;
}

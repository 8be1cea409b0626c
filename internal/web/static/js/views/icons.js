// views/icons.js: the app's few icons as inline SVG built with DOM calls,
// so they look the same on every system (an emoji needs an emoji font) and
// take the text's colour.

import {svg} from '../dom.js';

// icon returns an SVG icon of the 16×16 shapes given, labelled for
// assistive technology (role img, aria-label and a title for the tooltip).
function icon(cls, label, ...shapes) {
  return svg('svg', {class: 'icon ' + cls, viewBox: '0 0 16 16', width: 14, height: 14, role: 'img',
    'aria-label': label, focusable: 'false'}, svg('title', {}, label), ...shapes);
}

// lockIcon is the padlock of a private room.
export function lockIcon(label = 'Private room') {
  return icon('lock', label,
    svg('path', {d: 'M5 7.5V5a3 3 0 0 1 6 0v2.5', fill: 'none', stroke: 'currentColor', 'stroke-width': '1.8', 'stroke-linecap': 'round'}),
    svg('rect', {x: '2.5', y: '7', width: '11', height: '8', rx: '2', fill: 'currentColor'}));
}

// stroked returns the attributes of a line drawn in the text's colour.
const stroked = (d) => ({d, fill: 'none', stroke: 'currentColor', 'stroke-width': '1.6', 'stroke-linecap': 'round', 'stroke-linejoin': 'round'});

// pinIcon is a pushpin: a pinned message, or the pin action.
export function pinIcon(label = 'Pinned') {
  return icon('pin', label, svg('path', stroked('M6 2h4M7 2v4L4.5 9h7L9 6V2M8 9v5')));
}

// editIcon is a pencil.
export function editIcon(label = 'Edit') {
  return icon('edit', label, svg('path', stroked('M10.5 2.5l3 3L6 13H3v-3z')));
}

// deleteIcon is a bin.
export function deleteIcon(label = 'Delete') {
  return icon('delete', label, svg('path', stroked('M3 4.5h10M6.5 4.5V3h3v1.5M4.5 4.5l.7 9h5.6l.7-9')));
}

// closeIcon is a cross.
export function closeIcon(label = 'Close') {
  return icon('close', label, svg('path', stroked('M4 4l8 8M12 4l-8 8')));
}

// replyIcon is a curved arrow back.
export function replyIcon(label = 'Reply in thread') {
  return icon('reply', label, svg('path', stroked('M6 4L2.5 7.5 6 11M3 7.5h6a4 4 0 0 1 4 4V13')));
}

// reactIcon is a smiling face with a plus: add a reaction.
export function reactIcon(label = 'Add a reaction') {
  return icon('react', label, svg('path', stroked('M13.5 8A5.5 5.5 0 1 1 8 2.5M5.5 9.5s1 1.5 2.5 1.5 2.5-1.5 2.5-1.5M6 6.5h.01M10 6.5h.01M12.5 1v4M10.5 3h4')));
}

// bellIcon is a bell: desktop notifications (struck through when off).
export function bellIcon(label, on) {
  return icon('bell', label, svg('path', stroked('M4 11.5V7a4 4 0 0 1 8 0v4.5l1 1H3zM6.5 14h3')),
    on ? null : svg('path', stroked('M2 2l12 12')));
}

// searchIcon is a magnifying glass.
export function searchIcon(label = 'Search') {
  return icon('search', label, svg('path', stroked('M10.5 10.5L14 14M11.5 6.75a4.75 4.75 0 1 1-9.5 0 4.75 4.75 0 0 1 9.5 0z')));
}

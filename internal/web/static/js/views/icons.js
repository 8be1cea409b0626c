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

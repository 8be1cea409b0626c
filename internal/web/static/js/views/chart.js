// views/chart.js: a tiny SVG line chart, drawn with DOM calls (no inline
// markup, so the Content-Security-Policy needs no exceptions).

import {svg} from '../dom.js';

// sparkline draws values (oldest first) as a line 120×28 scaled to their
// maximum.
export function sparkline(values, width = 120, height = 28) {
  const max = Math.max(1, ...values);
  const el = svg('svg', {viewBox: `0 0 ${width} ${height}`, width, height, class: 'spark', role: 'img',
    'aria-label': `requests per second, peak ${max.toFixed(1)}`});
  if (values.length < 2) return el;
  const step = width / (values.length - 1);
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`);
  el.append(svg('polyline', {points: pts.join(' '), fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5'}));
  return el;
}

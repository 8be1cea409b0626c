// views/chart.js: a tiny SVG line chart, drawn with DOM calls (no inline
// markup, so the Content-Security-Policy needs no exceptions).

const NS = 'http://www.w3.org/2000/svg';

// sparkline draws values (oldest first) as a line 120×28 scaled to their
// maximum.
export function sparkline(values, width = 120, height = 28) {
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', width);
  svg.setAttribute('height', height);
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  const max = Math.max(1, ...values);
  svg.setAttribute('aria-label', `requests per second, peak ${max.toFixed(1)}`);
  if (values.length < 2) return svg;
  const step = width / (values.length - 1);
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`);
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', pts.join(' '));
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', '1.5');
  svg.append(line);
  return svg;
}

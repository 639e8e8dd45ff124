// One uPlot chart with what every dashboard chart needs: wall/relative/step x,
// log y, EMA with the raw line faint behind, markers (rule findings) at their
// x, a focus line (the moment a log line points at), drag to zoom, click or
// Enter on a point to pick it, arrow keys to move along the points.
import uPlot from './vendor/uPlot.esm.js';
import {cssVar, seriesColor, withAlpha} from './theme.js';
import {ema, fmtClock, fmtValue, el} from './util.js';

// Every live chart, by id: what the browser tests and the page code inspect.
window.__tw = window.__tw || {charts: {}};

// Every chart drawn and not destroyed yet. uPlot keeps each plot in global
// lists (window resize and scroll, the cursor sync group) until destroy():
// a page left without destroying its charts would leave them all working.
const liveCharts = new Set();

// Destroys every chart (app.js, when it leaves a page).
export function destroyAllCharts() {
  for (const chart of [...liveCharts]) chart.destroy(true);
}

let nextId = 0;

function xAxisValues(kind) {
  if (kind === 'relative') return (u, splits) => splits.map((s) => fmtRelative(s));
  if (kind === 'step') return (u, splits) => splits.map((s) => (Number.isInteger(s) ? fmtValue(s) : ''));
  return undefined;  // uPlot's time axis
}

export function fmtRelative(seconds) {
  if (seconds === null || seconds === undefined) return '';
  const sign = seconds < 0 ? '-' : '';
  let s = Math.abs(seconds);
  if (s < 60) return `${sign}${Number(s.toPrecision(4))}s`;
  s = Math.round(s);  // whole seconds first: 119.7 s is 2m00, not 1m60
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (m < 60) return `${sign}${m}m${String(s).padStart(2, '0')}`;
  return `${sign}${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}`;
}

function fmtX(kind, x) {
  if (kind === 'time') return fmtClock(x);
  if (kind === 'relative') return fmtRelative(x);
  return `step ${fmtValue(x)}`;
}

// A chart's figure and title without the chart: what a page shows until the
// chart is needed (a page of many charts builds only those near the viewport).
// makeChart(null, {...spec, box}) then draws the chart in it.
export function chartBox(target, spec) {
  const box = el('figure', {class: 'chart', id: `chart-${nextId++}`, tabindex: '0', role: 'group',
                            'aria-label': spec.ariaLabel || spec.title});
  const caption = el('figcaption', {class: 'chart-title'}, spec.title);
  caption.append(' ', el('span', {class: 'chart-badge', 'aria-live': 'off'}));
  box.append(caption);
  target.append(box);
  return box;
}

// spec: {title, xKind, log, ema (0 = off), lines: [{label}], height, sync,
//        onZoom(min, max), onReset(), onPick({x, t, value, series}), ariaLabel,
//        box (a chartBox to draw in; a new figure in target without it),
//        width (px; without it, the figure's, read from the layout)}
export function makeChart(target, spec) {
  const box = spec.box || chartBox(target, spec);
  const id = box.id;
  const badge = box.querySelector('.chart-badge');

  const kind = spec.xKind || 'time';
  const emaWeight = spec.ema || 0;
  const fg = cssVar('--fg-muted') || '#666';
  const grid = cssVar('--grid') || '#ddd';
  // Findings marked on charts are the issues (job.js), as in the report.
  const markerColors = {issue: '#e11d48'};
  let markers = [];
  let focusX = null;
  let ts = [];       // time (ms) of each point, per x index
  let rawLines = []; // y arrays as received (before EMA)
  let dragging = false;  // a drag began on this chart (not a synced one)

  const series = [{label: kind === 'step' ? 'step' : 'time', value: (u, v) => (v === null ? '' : fmtX(kind, v))}];
  (spec.lines || [{label: spec.title}]).forEach((line, i) => {
    const color = line.color || seriesColor(i);
    const faint = emaWeight > 0;
    // Points as uPlot decides (shown where they are few enough to tell apart:
    // a series of one point is a dot, not nothing); never on the faint line
    // under a smoothed one (the smoothed line shows them).
    series.push({label: line.label, stroke: faint ? withAlpha(color, 0.3) : color, width: 1,
                 spanGaps: true, points: faint ? {show: false} : {}, value: (u, v) => fmtValue(v)});
    if (faint) {
      series.push({label: `${line.label} (EMA ${emaWeight})`, stroke: color, width: 2,
                   spanGaps: true, points: {}, value: (u, v) => fmtValue(v)});
    }
  });
  for (const band of spec.bands || []) series.push(...band.series);

  const drawMarkers = (u) => {
    const ctx = u.ctx;
    const {left, top, width, height} = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const m of markers) {
      const x = u.valToPos(m.x, 'x', true);
      if (!(x >= left && x <= left + width)) continue;
      ctx.strokeStyle = markerColors[m.severity] || '#e11d48';
      ctx.fillStyle = ctx.strokeStyle;
      ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath();
      ctx.moveTo(x - 5 * devicePixelRatio, top);
      ctx.lineTo(x + 5 * devicePixelRatio, top);
      ctx.lineTo(x, top + 8 * devicePixelRatio);
      ctx.fill();
    }
    if (focusX !== null) {
      const x = u.valToPos(focusX, 'x', true);
      if (x >= left && x <= left + width) {
        ctx.strokeStyle = cssVar('--accent') || '#3b82f6';
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + height);
        ctx.stroke();
      }
    }
    ctx.restore();
  };

  let u = null;
  const opts = {
    width: spec.width || Math.max(300, box.clientWidth || (target && target.clientWidth) || 600),
    height: spec.height || 220,
    ms: 1,
    series,
    bands: (spec.bands || []).map((b) => b.band),
    scales: {
      x: {time: kind === 'time'},
      y: spec.log ? {distr: 3} : {},
    },
    axes: [
      {stroke: fg, grid: {stroke: grid, width: 1}, ticks: {stroke: grid}, values: xAxisValues(kind),
       incrs: kind === 'step' ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6] : undefined},
      {stroke: fg, grid: {stroke: grid, width: 1}, ticks: {stroke: grid}, size: 60,
       values: (self, splits) => splits.map((s) => fmtValue(s))},
    ],
    cursor: {
      drag: {x: true, y: false, setScale: false},
      y: false,  // a vertical line marks the moment; no horizontal one
      // Only the cursor moves in step across charts; a drag zooms from its own chart.
      sync: spec.sync ? {key: spec.sync, filters: {pub: (type) => type === 'mousemove' || type === 'mouseleave'}} : undefined,
    },
    legend: {live: true},
    hooks: {
      draw: [drawMarkers],
      setSelect: [(self) => {
        if (!dragging || self.select.width < 3) return;
        dragging = false;
        const min = self.posToVal(self.select.left, 'x');
        const max = self.posToVal(self.select.left + self.select.width, 'x');
        self.setSelect({left: 0, top: 0, width: 0, height: 0}, false);
        if (spec.onZoom) spec.onZoom(min, max);
      }],
    },
  };

  const aligned = (xs) => {
    const data = [xs];
    rawLines.forEach((ys) => {
      data.push(ys);
      if (emaWeight > 0) data.push(ema(ys, emaWeight));
    });
    for (const band of spec.bands || []) data.push(...band.data);
    return data;
  };

  u = new uPlot(opts, aligned([]), box);
  window.__tw.charts[id] = u;

  // A click that is not the end of a drag picks the point under the cursor.
  let downX = 0;
  u.over.addEventListener('mousedown', (e) => { downX = e.clientX; dragging = true; });
  u.over.addEventListener('click', (e) => {
    if (Math.abs(e.clientX - downX) > 3) return;
    pick();
  });
  u.over.addEventListener('dblclick', () => spec.onReset && spec.onReset());

  function pick() {
    const i = u.cursor.idx;
    if (i === null || i === undefined || !spec.onPick) return;
    spec.onPick({x: u.data[0][i], t: ts[i], value: rawLines[0] ? rawLines[0][i] : null, index: i});
  }

  // Listeners on the figure go with the chart (destroy(true) keeps the figure).
  const listening = new AbortController();
  box.addEventListener('keydown', (e) => {
    const n = u.data[0].length;
    if (!n) return;
    let i = u.cursor.idx ?? -1;
    if (e.key === 'ArrowRight') i = Math.min(n - 1, i + Math.max(1, Math.floor(n / 100)));
    else if (e.key === 'ArrowLeft') i = Math.max(0, i - Math.max(1, Math.floor(n / 100)));
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = n - 1;
    else if (e.key === 'Enter') { pick(); e.preventDefault(); return; }
    else return;
    e.preventDefault();
    if (i < 0) i = 0;
    u.setCursor({left: u.valToPos(u.data[0][i], 'x'), top: 10});
  }, {signal: listening.signal});

  const resize = new ResizeObserver(() => {
    const w = Math.max(300, box.clientWidth);
    if (Math.abs(w - u.width) > 2) u.setSize({width: w, height: u.height});
  });
  resize.observe(box);

  const api = {
    id, box, uplot: u,
    // xs ascending; lines: one y array per line (same length); times: ms per x.
    // info: {raw, tier} of the chart API's answer, or note: the badge's text.
    setData(xs, lines, times, info = {}) {
      rawLines = lines;
      ts = times || xs;
      u.setData(aligned(xs), true);
      box.dataset.points = String(xs.length);
      box.dataset.raw = info.raw ? 'true' : 'false';
      if (info.tier) box.dataset.tier = info.tier;
      badge.textContent = info.note !== undefined ? info.note : info.raw ? 'raw samples'
        : (info.tier ? `${xs.length} points (M4 of the ${info.tier === 'raw' ? 'raw samples' : `${info.tier} rollup`})` : '');
    },
    setBands(bands) { spec.bands = bands; },
    setMarkers(list) { markers = list; u.redraw(false); },
    setFocus(x) {
      focusX = x;
      box.dataset.focus = x === null ? '' : String(x);
      u.redraw(false);
      if (x !== null) u.setCursor({left: u.valToPos(x, 'x'), top: 10});
    },
    // Index of the point nearest to time `tMs` (for the log -> chart link).
    indexAtTime(tMs) {
      let best = -1;
      let bestD = Infinity;
      for (let i = 0; i < ts.length; i++) {
        const d = Math.abs(ts[i] - tMs);
        if (d < bestD) { bestD = d; best = i; }
      }
      return best;
    },
    xAt(i) { return u.data[0][i]; },
    width() { return u.bbox.width / devicePixelRatio; },
    // keepBox: the figure stays (a chart made anew in it, e.g. with other lines).
    destroy(keepBox = false) {
      if (!liveCharts.delete(api)) return;  // destroyed already
      listening.abort();
      resize.disconnect();
      delete window.__tw.charts[id];
      u.destroy();
      if (!keepBox) box.remove();
    },
  };
  box.__chart = api;
  liveCharts.add(api);
  return api;
}

// Job page: every metric as a chart, the system panel on the same time axis,
// rule statuses and findings (marked on the charts), the log; live.
//
// A job may have hundreds of series: a chart is built and its data asked for
// only when its figure comes within a screen of the viewport; until then the
// figure is an empty frame of the chart's size (the page keeps its height).
import * as api from './api.js';
import {chartBox, makeChart} from './charts.js';
import {hostsBody, isHostStep} from './hosts.js';
import {makeLogPanel} from './logpanel.js';
import {rulesBody} from './rules.js';
import {tensorPanel} from './tensors.js';
import {hashFor, updateParams} from './state.js';
import {seriesColor} from './theme.js';
import {el, fmtDuration, fmtTime, fmtValue, jobSpan, isRunning, findingsOf, debounce, throttle} from './util.js';

const EMA_CHOICES = ['0', '0.6', '0.8', '0.9', '0.95', '0.99'];

// The label of a system series: its dimensions other than Host.
function systemLabel(s) {
  const rest = Object.entries(s.dimensions || {}).filter(([k]) => k !== 'Host' && k !== 'TrainingJobName');
  const host = (s.dimensions || {}).Host || '';
  const suffix = host.includes('/') ? host.split('/').pop() : host;
  const parts = rest.map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(' ') : (suffix || s.metric);
}

export async function renderJob(root, name, params, ctx) {
  const emaW = Number(params.get('ema') || 0) || 0;
  const logY = params.get('log') === '1';
  // The zoomed range, in ms since the epoch whatever the x-axis (by step, the
  // chart API selects samples by time too); null: the whole job.
  let zoom = params.has('from') && params.has('to')
    ? {from: Number(params.get('from')), to: Number(params.get('to'))} : null;

  let [record, series] = await Promise.all([api.getJob(name), api.jobSeries(name)]);
  // A job whose step metric has samples opens by step (how its curves are
  // compared); others by wall time (every run names a step metric, "step" by
  // default, which many jobs never print). The URL's x= overrides either.
  const hasSteps = Boolean(record.step_metric) &&
    series.some((s) => s.group === 'algorithm' && s.metric === record.step_metric);
  const xKind = ['time', 'relative', 'step'].includes(params.get('x')) ? params.get('x')
    : (hasSteps ? 'step' : 'time');
  const span = () => {
    const s = jobSpan(record);
    const last = Math.max(0, ...series.map((x) => x.last_ms || 0));
    return {start: s.start, end: Math.max(s.end, last + 1)};
  };

  // Header and controls.
  const statusPill = el('span', {class: `status status-${record.status}`, id: 'job-status-pill'}, record.status);
  const timing = el('span', {class: 'timing'});
  const liveNote = el('span', {class: 'live-note', role: 'status', 'aria-live': 'polite'});
  const updateHeader = () => {
    const s = jobSpan(record);
    statusPill.className = `status status-${record.status}`;
    statusPill.textContent = record.status;
    timing.textContent = `started ${fmtTime(s.start)} · ${fmtDuration(s.end - s.start)}` +
      (record.failure_reason ? ` · ${record.failure_reason}` : '');
  };
  updateHeader();
  // A running job's duration goes on between its events.
  const ticking = setInterval(() => {
    if (!statusPill.isConnected) clearInterval(ticking);  // the page is gone
    else if (isRunning(record.status)) updateHeader();
  }, 1000);
  const xSel = el('select', {id: 'x-kind'},
    [['time', 'wall time'], ['relative', 'relative time'], ['step', 'step']].map(([v, label]) =>
      el('option', {value: v, selected: v === xKind, disabled: v === 'step' && !record.step_metric}, label)));
  const emaSel = el('select', {id: 'ema'}, EMA_CHOICES.map((v) =>
    el('option', {value: v, selected: Number(v) === emaW}, v === '0' ? 'off' : v)));
  const logBox = el('input', {type: 'checkbox', id: 'log-y', checked: logY});
  const resetBtn = el('button', {type: 'button', id: 'zoom-reset', disabled: !zoom}, 'Reset zoom');
  const rerenderWith = (changes) => { updateParams(changes); ctx.rerender(); };
  xSel.addEventListener('change', () => rerenderWith({x: xSel.value, from: '', to: ''}));
  emaSel.addEventListener('change', () => rerenderWith({ema: emaSel.value === '0' ? '' : emaSel.value}));
  logBox.addEventListener('change', () => rerenderWith({log: logBox.checked ? '1' : ''}));
  resetBtn.addEventListener('click', () => setZoom(null));

  root.append(
    el('nav', {class: 'crumbs', 'aria-label': 'Breadcrumb'}, el('a', {href: hashFor('jobs')}, 'Jobs'), ' / ', name),
    el('h1', {}, name, ' ', statusPill),
    el('p', {class: 'sub'}, timing, ' ',
      el('a', {href: hashFor('compare', undefined, {jobs: name})}, 'Compare with other jobs…'), ' · ',
      el('a', {href: `/api/v1/jobs/${encodeURIComponent(name)}/report`, id: 'report-link', target: '_blank',
               rel: 'noopener'}, 'Report (one HTML file)'), ' ', liveNote),
    el('div', {class: 'toolbar', role: 'toolbar', 'aria-label': 'Chart options'},
      el('label', {for: 'x-kind'}, 'x-axis'), xSel,
      el('label', {for: 'ema'}, 'Smoothing (EMA)'), emaSel,
      el('span', {class: 'check'}, logBox, el('label', {for: 'log-y'}, 'Log scale')),
      resetBtn,
      el('span', {class: 'hint'}, 'Drag across a chart to zoom, double-click to zoom out, click a point for its log lines.')));

  const rulesSec = el('section', {'aria-labelledby': 'h-rules', class: 'panel'}, el('h2', {id: 'h-rules'}, 'Rules'));
  const metricsSec = el('section', {'aria-labelledby': 'h-metrics', class: 'panel'}, el('h2', {id: 'h-metrics'}, 'Metrics'));
  const systemSec = el('section', {'aria-labelledby': 'h-system', class: 'panel'}, el('h2', {id: 'h-system'}, 'System'));
  const logSec = el('section', {'aria-labelledby': 'h-log', class: 'panel', id: 'log-panel'}, el('h2', {id: 'h-log'}, 'Log'));
  // A job on several hosts: the hosts side by side (the straggler view): each
  // host's own steps on one chart, and a table of their pace and utilisation.
  const multiHost = (record.hosts || []).length > 1;
  const hostsSec = multiHost ? el('section', {'aria-labelledby': 'h-hosts', class: 'panel', id: 'hosts-panel'},
    el('h2', {id: 'h-hosts'}, 'Hosts')) : null;
  const hostsGrid = el('div', {class: 'grid'});
  const metricsGrid = el('div', {class: 'grid'});
  const systemGrid = el('div', {class: 'grid'});
  // Metric math over the job's metrics (CloudWatch's expressions): one chart.
  const mathInput = el('input', {type: 'text', id: 'math-expr', size: 40, spellcheck: 'false',
                                 value: params.get('expr') || '', placeholder: 'e.g. RATE(train_loss)',
                                 'aria-describedby': 'math-ids'});
  const mathIdsNote = el('span', {class: 'hint', id: 'math-ids'});
  const mathError = el('p', {class: 'math-error', id: 'math-error', role: 'alert'});
  const mathForm = el('form', {class: 'toolbar math', id: 'math-form'},
    el('label', {for: 'math-expr'}, 'Metric math'), mathInput,
    el('button', {type: 'submit'}, 'Draw'), mathIdsNote);
  const mathGrid = el('div', {class: 'grid'});
  metricsSec.append(mathForm, mathError, mathGrid, metricsGrid);
  systemSec.append(systemGrid);
  // The hook's tensor statistics: one chart, chosen by collection and statistic.
  const tensorOptions = {params, logY, byStep: Boolean(record.step_metric), span, report: (e) => ctx.report(e)};
  let tensors = tensorPanel(name, series, tensorOptions);
  const tensorKeys = new Set(series.filter((s) => s.group === 'tensors').map(api.seriesKey));
  root.append(...[rulesSec, hostsSec, metricsSec, tensors && tensors.section, systemSec, logSec].filter(Boolean));

  // x of a time (ms) on the page's axis; and back.
  const jobStart = jobSpan(record).start;
  const toX = (tMs) => (xKind === 'relative' ? (tMs - jobStart) / 1000 : tMs);
  const fromX = (x) => (xKind === 'relative' ? jobStart + x * 1000 : x);

  // Charts: one per algorithm metric; one per system metric (a line per core, GPU...).
  // entry: {box, chart (null until built), data (null until drawn), lines, isSystem,
  //         kind, near (within a screen of the viewport), stale (to fetch again when near)}
  const charts = [];
  const byKey = new Map();  // series key -> {entry, line index}
  let focusedT = null;  // the moment marked on the charts (focusTime), ms
  const measured = new Map();  // a drawn figure's height by its lines' count|system, px
  const shapeOf = (entry) => `${entry.lines.length}|${entry.isSystem}`;
  // A chart is built and fetched when it comes within one screen of the viewport
  // (while the page opens, the charts in view first: booting).
  let booting = true;
  const observer = new IntersectionObserver((seen) => {
    for (const e of seen) {
      const entry = e.target.__entry;
      if (!entry) continue;
      entry.near = e.isIntersecting;
      if (entry.near && !booting) load(entry);
    }
  }, {rootMargin: '100% 0px'});
  ctx.onLeave(() => observer.disconnect());
  const algorithm = series.filter((s) => s.group === 'algorithm');
  // Each host's own steps: the hosts panel's (a job on one host has its step chart).
  const system = series.filter((s) => s.group === 'system' && !isHostStep(s));
  if (multiHost) {
    const hostSteps = series.filter(isHostStep);
    hostsSec.append(el('div', {id: 'hosts-body'}), hostsGrid);
    if (hostSteps.length) {
      hostSteps.sort((a, b) => systemLabel(a).localeCompare(systemLabel(b), undefined, {numeric: true}));
      addChart(hostsGrid, hostSteps, true, 'Steps by host').hostSteps = true;
    }
  }
  for (const s of algorithm) addChart(metricsGrid, [s], false, s.metric);
  // Each metric's Id in expressions: its name made an Id ("train:loss" -> train_loss).
  const mathIds = new Map();
  const MATH_ID = 'expr';  // the expression's own query Id
  function refreshMathIds() {
    for (const s of series.filter((x) => x.group === 'algorithm')) {
      if ([...mathIds.values()].includes(s)) continue;
      let id = s.metric.replace(/[^A-Za-z0-9_]/g, '_');
      id = /^[A-Z]/.test(id) ? id[0].toLowerCase() + id.slice(1) : id;
      if (!/^[a-z]/.test(id)) id = `m_${id}`;
      for (let n = 2; mathIds.has(id) || id === MATH_ID; n++) id = `${id.replace(/_\d+$/, '')}_${n}`;
      mathIds.set(id, s);
    }
    mathIdsNote.textContent = mathIds.size
      ? `Ids: ${[...mathIds].map(([id, s]) => (id === s.metric ? id : `${id} (${s.metric})`)).join(', ')}`
      : 'No metrics to compute with yet.';
  }
  refreshMathIds();
  let mathEntry = null;
  function drawMath(expr) {
    mathError.textContent = '';
    if (mathEntry) {
      charts.splice(charts.indexOf(mathEntry), 1);
      observer.unobserve(mathEntry.box);
      if (mathEntry.chart) mathEntry.chart.destroy();
      mathEntry.box.remove();
      mathEntry = null;
    }
    if (!expr) return null;
    mathEntry = addChart(mathGrid, [{namespace: 'math', metric: expr, dimensions: {}}], false, `= ${expr}`);
    mathEntry.expr = expr;
    mathEntry.spec.ema = 0;
    if (mathEntry.kind === 'step') mathEntry.kind = mathEntry.spec.xKind = 'time';
    mathEntry.box.dataset.metric = 'math';
    observer.observe(mathEntry.box);
    return mathEntry;
  }
  mathForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const expr = mathInput.value.trim();
    updateParams({expr});
    const entry = drawMath(expr);
    if (entry) {
      entry.near = true;
      load(entry);
    }
  });
  if (params.get('expr')) drawMath(params.get('expr'));
  const groups = new Map();  // metric|unit -> system series drawn on one chart
  const groupKey = (s) => `${s.metric}|${s.unit || ''}`;
  for (const s of system) {
    if (!groups.has(groupKey(s))) groups.set(groupKey(s), []);
    groups.get(groupKey(s)).push(s);
  }
  // SageMaker's instance metrics first, then the finer ones by name.
  const FIRST = ['CPUUtilization', 'MemoryUtilization', 'GPUUtilization', 'GPUMemoryUtilization', 'DiskUtilization'];
  const rank = (m) => (FIRST.includes(m) ? FIRST.indexOf(m) : FIRST.length);
  [...groups.values()]
    .sort((a, b) => rank(a[0].metric) - rank(b[0].metric) || a[0].metric.localeCompare(b[0].metric))
    .forEach(addSystemChart);
  if (!algorithm.length) metricsGrid.append(el('p', {class: 'empty'}, 'No metrics yet.'));
  if (!system.length) systemGrid.append(el('p', {class: 'empty'}, 'No system samples (profiling off?).'));

  function addSystemChart(list) {
    list.sort((a, b) => systemLabel(a).localeCompare(systemLabel(b), undefined, {numeric: true}));
    const unit = list[0].unit && list[0].unit !== 'None' ? ` (${list[0].unit})` : '';
    return addChart(systemGrid, list, true, list[0].metric + unit);
  }

  // Series that appeared since the page was drawn get their chart (a system
  // metric's chart is drawn again with its new line).
  function adopt(now) {
    const known = new Map(series.map((s) => [api.seriesKey(s), s]));
    for (const s of now) {
      const old = known.get(api.seriesKey(s));
      if (old) old.last_ms = Math.max(old.last_ms || 0, s.last_ms || 0);
    }
    const fresh = now.filter((s) => !known.has(api.seriesKey(s)));
    // Tensors: the panel takes them (made when the job's first ones come).
    const freshTensors = fresh.filter((s) => s.group === 'tensors');
    for (const s of freshTensors) tensorKeys.add(api.seriesKey(s));
    if (freshTensors.length && tensors) {
      tensors.adopt(freshTensors);
    } else if (freshTensors.length) {
      tensors = tensorPanel(name, freshTensors, tensorOptions);
      if (tensors) {
        systemSec.before(tensors.section);
        tensors.drawWhenNear();
      }
    }
    for (const s of fresh) {
      series.push(s);
      if (s.group === 'algorithm') refreshMathIds();
      if (s.group === 'tensors') continue;  // the tensor panel draws what it chose
      let entry;
      if (isHostStep(s)) {
        if (!multiHost) continue;
        // The hosts' steps chart again, with this host's line too.
        const old = charts.find((c) => c.hostSteps);
        if (old) {
          charts.splice(charts.indexOf(old), 1);
          observer.unobserve(old.box);
          if (old.chart) old.chart.destroy();
          else old.box.remove();
        }
        const lines = series.filter(isHostStep)
          .sort((a, b) => systemLabel(a).localeCompare(systemLabel(b), undefined, {numeric: true}));
        entry = addChart(hostsGrid, lines, true, 'Steps by host');
        entry.hostSteps = true;
        observer.observe(entry.box);
        continue;
      }
      if (s.group !== 'system') {
        metricsGrid.querySelector('.empty')?.remove();
        entry = addChart(metricsGrid, [s], false, s.metric);
      } else {
        systemGrid.querySelector('.empty')?.remove();
        const k = groupKey(s);
        if (!groups.has(k)) groups.set(k, []);
        groups.get(k).push(s);
        const old = charts.find((c) => c.isSystem && groupKey(c.lines[0]) === k);
        if (old) {
          charts.splice(charts.indexOf(old), 1);
          observer.unobserve(old.box);
          if (old.chart) old.chart.destroy();
          else old.box.remove();
        }
        entry = addSystemChart(groups.get(k));
      }
      // Drawn when it comes near the viewport (the observer's first word on it).
      observer.observe(entry.box);
    }
  }

  function addChart(grid, lines, isSystem, title) {
    // The system panel stays on the time axis when the metrics are by step.
    const kind = isSystem && xKind === 'step' ? 'time' : xKind;
    const entry = {lines, isSystem, kind, data: null, chart: null, near: false, stale: false, seq: 0};
    entry.spec = {
      title,
      xKind: kind,
      height: isSystem ? 170 : 220,
      log: logY,
      ema: isSystem ? 0 : emaW,
      lines: lines.map((s, i) => ({label: isSystem ? systemLabel(s) : s.metric, color: seriesColor(i)})),
      sync: kind === 'step' ? undefined : 'job-time',
      ariaLabel: `${title} chart; arrow keys move along the points, Enter opens the log lines of that moment`,
      onZoom: (min, max) => zoomTo(entry, min, max),
      onReset: () => setZoom(null),
      onPick: (p) => openLogAt(p.t),
    };
    entry.box = chartBox(grid, entry.spec);
    entry.box.__entry = entry;
    entry.box.dataset.metric = lines[0].metric;
    entry.box.dataset.state = 'waiting';
    entry.box.style.minHeight = `${frameHeight(entry)}px`;
    charts.push(entry);
    lines.forEach((s, i) => byKey.set(api.seriesKey(s), {entry, index: i}));
    return entry;
  }

  // The height of a chart's figure before it is drawn: its title, plot and
  // legend (uPlot's: a row of "label: value" items, wrapped; about two charts
  // a row, read from no layout). Measured on the first drawn chart of each
  // kind (the first screen's once it is drawn).
  function frameHeight(entry) {
    if (measured.has(shapeOf(entry))) return measured.get(shapeOf(entry));
    const items = entry.lines.length + 1;  // the x value heads the legend
    const perRow = Math.max(1, Math.floor(Math.min(innerWidth, 1600) / 2 / 130));
    return 44 + entry.spec.height + 26 * Math.ceil(items / perRow);
  }
  function measure(entry) {
    const key = shapeOf(entry);
    if (measured.has(key)) return;
    // To the end of its content: the grid stretches a figure to its row's tallest.
    const box = entry.box;
    const css = getComputedStyle(box);
    measured.set(key, Math.ceil(box.lastElementChild.getBoundingClientRect().bottom - box.getBoundingClientRect().top +
                                parseFloat(css.paddingBottom) + parseFloat(css.borderBottomWidth)));
    for (const c of charts) if (!c.chart && shapeOf(c) === key) c.box.style.minHeight = `${measured.get(key)}px`;
  }

  // Builds the chart of an entry near the viewport and fetches its data; fetches
  // again a drawn chart whose data went stale while it was away. The promise of
  // the fetch, or null when there is nothing to do. width: the figure's, when
  // known (no layout to read it).
  function load(entry, width) {
    if (entry.chart && !entry.stale) return null;
    if (!entry.chart) {
      entry.box.style.minHeight = '';
      entry.chart = makeChart(null, {...entry.spec, box: entry.box, width});
    }
    return fetchChart(entry).catch((e) => {
      entry.box.dataset.error = e.message;
      entry.box.dataset.state = 'error';
      if (!entry.expr) ctx.report(e);  // the expression's error is shown under its form
    });
  }

  // The expression's series over the range, as GetMetricData computes them
  // with the metrics it names (every metric for METRICS()) read at a period
  // of about a pixel column: [{label, t, y}], one per series it gives.
  async function fetchMath(entry, range, width) {
    const all = /\bMETRICS\s*\(/i.test(entry.expr);
    const used = [...mathIds].filter(([id]) => all || new RegExp(`\\b${id}\\b`).test(entry.expr))
      .slice(0, 499);  // GetMetricData's 500 queries, the expression's own included
    const need = (range.to - range.from) / 1000 / Math.max(1, width);
    const period = [1, 5, 10, 20, 30].find((p) => p >= need) || 60 * Math.ceil(need / 60);
    const queries = used.map(([id, s]) => ({
      Id: id, ReturnData: false,
      MetricStat: {Period: period, Stat: 'Average', Unit: s.unit && s.unit !== 'None' ? s.unit : undefined,
                   Metric: {Namespace: s.namespace, MetricName: s.metric,
                            Dimensions: Object.entries(s.dimensions || {}).map(([Name, Value]) => ({Name, Value}))}}}));
    // No Label: the series of an expression that gives several (METRICS() * 2)
    // are then labelled by their metrics; one alone is labelled by the expression.
    queries.push({Id: MATH_ID, Expression: entry.expr});
    try {
      const answer = await api.metricData({StartTime: Math.floor(range.from / 1000), EndTime: Math.ceil(range.to / 1000),
                                           ScanBy: 'TimestampAscending', MetricDataQueries: queries});
      const results = answer.MetricDataResults || [];
      const lines = results.map((r) => ({label: results.length === 1 ? entry.expr : r.Label || r.Id,
                                         t: r.Timestamps.map((x) => Math.round(x * 1000)), y: r.Values}));
      if (!lines.length) lines.push({label: entry.expr, t: [], y: []});
      if (entry === mathEntry) mathError.textContent = '';
      entry.box.dataset.period = String(period);
      entry.box.dataset.lines = String(lines.length);
      const points = lines.reduce((n, l) => n + l.t.length, 0);
      return {lines, note: `${points} points${lines.length > 1 ? ` in ${lines.length} series` : ''} (the metrics' averages per ${period} s)`};
    } catch (e) {
      // A refused expression is not fetched again as samples come (its error stays).
      if (entry === mathEntry) mathError.textContent = `${entry.expr}: ${e.message}`;
      entry.refused = e.status === 400;
      throw e;
    }
  }

  async function fetchChart(entry) {
    const {chart, lines, kind} = entry;
    const seq = ++entry.seq;
    entry.stale = false;
    entry.box.dataset.state = 'loading';
    const sp = span();
    const range = zoom || {from: sp.start, to: sp.end};
    const convert = (a) => ({x: kind === 'relative' ? a.t.map(toX) : (a.x || a.t), y: a.y, t: a.t});
    if (entry.expr) {
      const a = await fetchMath(entry, range, chart.width());
      if (seq !== entry.seq || entry !== mathEntry) return;  // a newer fetch, or another expression
      const labels = a.lines.map((l) => l.label);
      if (labels.join('\n') !== entry.spec.lines.map((l) => l.label).join('\n')) {
        // uPlot's lines are fixed when it is made: made anew for the expression's series.
        entry.spec.lines = labels.map((label, i) => ({label, color: seriesColor(i)}));
        const width = chart.width();
        chart.destroy(true);
        entry.chart = makeChart(null, {...entry.spec, box: entry.box, width});
      }
      const {xs, ys, ts} = aligned(a.lines.map(convert), kind);
      entry.data = {xs, ys, ts, raw: false, tier: ''};
      entry.chart.setData(xs, ys, ts, {note: a.note});
      entry.chart.uplot.setScale('x', {min: toXk(kind, range.from), max: toXk(kind, range.to)});
      entry.box.dataset.state = 'drawn';
      return;
    }
    const req = {x: kind === 'step' ? 'step' : 'time', job: kind === 'step' ? name : undefined,
                 start: range.from, end: range.to, width: Math.round(chart.width())};
    const answers = await Promise.all(lines.map((s) => api.chart(s, req)));
    if (seq !== entry.seq) return;  // a newer fetch of this chart (zoomed again) is on its way
    const {xs, ys, ts} = aligned(answers.map(convert), kind);
    const raw = answers.every((a) => a.raw);
    entry.data = {xs, ys, ts, raw, tier: answers[0] ? answers[0].tier : ''};
    chart.setData(xs, ys, ts, {raw, tier: entry.data.tier});
    if (kind !== 'step') chart.uplot.setScale('x', {min: toXk(kind, range.from), max: toXk(kind, range.to)});
    placeMarkers(entry);
    if (focusedT !== null) focusOn(entry, focusedT);
    entry.box.dataset.state = 'drawn';
    if (!booting) measure(entry);  // (uPlot sizes a new chart a moment after it is made)
  }
  const toXk = (kind, tMs) => (kind === 'relative' ? (tMs - jobStart) / 1000 : tMs);
  // Lines ({x, y, t} each) on one x, as uPlot draws them; a line's gaps are null.
  function aligned(conv, kind) {
    if (conv.length === 1) return {xs: conv[0].x, ys: [conv[0].y], ts: conv[0].t};
    const all = new Set();
    conv.forEach((c) => c.x.forEach((x) => all.add(x)));
    const xs = [...all].sort((a, b) => a - b);
    const pos = new Map(xs.map((x, i) => [x, i]));
    const ys = conv.map((c) => {
      const out = new Array(xs.length).fill(null);
      c.x.forEach((x, i) => { out[pos.get(x)] = c.y[i]; });
      return out;
    });
    return {xs, ys, ts: kind === 'relative' ? xs.map(fromX) : xs};
  }

  // Every drawn chart asks again (zoom, reset, polling): those near the
  // viewport now, the others when they come back to it.
  async function fetchAll() {
    const loads = [];
    for (const c of charts) {
      if (!c.chart) continue;
      c.stale = true;
      if (c.near) loads.push(load(c));
    }
    await Promise.all(loads);
  }

  // A drag over [min, max] of a chart's x: the times it covers.
  function zoomTo(entry, min, max) {
    if (entry.kind !== 'step') {
      const from = entry.kind === 'relative' ? jobStart + min * 1000 : min;
      const to = entry.kind === 'relative' ? jobStart + max * 1000 : max;
      setZoom({from: Math.floor(from), to: Math.ceil(to)});
      return;
    }
    const d = entry.data;
    if (!d) return;
    const inside = d.ts.filter((t, i) => d.xs[i] >= min && d.xs[i] <= max);
    if (!inside.length) return;
    setZoom({from: Math.min(...inside), to: Math.max(...inside) + 1});
  }

  function setZoom(z) {
    zoom = z;
    resetBtn.disabled = !zoom;
    updateParams(zoom ? {from: zoom.from, to: zoom.to} : {from: '', to: ''});
    fetchAll();
  }

  // Findings: listed under Rules and marked on every chart at their time (or step).
  function placeMarkers(entry) {
    if (!entry.chart) return;
    const list = findingsOf(record).map((f) => {
      let x;
      if (entry.kind === 'step') x = f.step;
      else x = toXk(entry.kind, f.t_ms);
      return {x, severity: (f.severity || '').toLowerCase(), label: f.rule};
    }).filter((m) => m.severity !== 'warning' && m.x !== undefined && m.x !== null);
    entry.chart.setMarkers(list);
  }

  // A second host registered after the page was built (agents start one by
  // one): the page again, with its hosts panel.
  function gainedHosts() {
    if (multiHost || (record.hosts || []).length < 2) return false;
    ctx.rerenderSoon();
    return true;
  }

  // The hosts table (hosts.js), drawn again while the job runs.
  let hostsSeq = 0;
  async function renderHosts() {
    if (!multiHost) return;
    const seq = ++hostsSeq;
    const body = await hostsBody(record);
    if (body && seq === hostsSeq) hostsSec.querySelector('#hosts-body').replaceWith(body);
  }
  if (multiHost) {
    const hostsTimer = setInterval(() => { if (isRunning(record.status)) renderHosts(); }, 10000);
    ctx.onLeave(() => clearInterval(hostsTimer));
  }

  function renderRules() {
    const body = rulesBody(record, (tMs) => focusTime(tMs, true));
    const old = rulesSec.querySelector('#rules-body');
    if (old) old.replaceWith(body);
    else rulesSec.append(body);
  }

  // chart point -> log lines; log line -> chart point.
  async function openLogAt(tMs) {
    if (tMs === undefined || tMs === null) return;
    updateParams({at: Math.round(tMs), follow: ''});
    focusTime(tMs, false);
    await logs.openAt(tMs);
  }

  // Marks the moment on every drawn chart; a chart drawn later marks it then.
  function focusTime(tMs, scroll) {
    focusedT = tMs;
    for (const c of charts) if (c.data) focusOn(c, tMs);
    // The first chart comes into view: it is drawn (if it was not) with the mark.
    if (scroll && charts.length) charts[0].box.scrollIntoView({block: 'center'});
    updateParams({at: Math.round(tMs)});
  }
  function focusOn(c, tMs) {
    const i = c.chart.indexAtTime(tMs);
    const x = c.kind === 'step' ? (i >= 0 ? c.chart.xAt(i) : null) : toXk(c.kind, tMs);
    c.chart.setFocus(x);
  }

  const logs = makeLogPanel(logSec, {
    record, stream: params.get('stream') || '', query: params.get('q') || '',
    follow: params.has('at') ? false : params.get('follow') !== '0',
    onLine: (tMs) => focusTime(tMs, true),
    onChange: ({q, follow, stream}) => updateParams({q, follow: follow ? '' : '0', stream}),
  });

  // Live: new points are appended, then re-aggregated by the chart API once
  // a chart holds more than 4 points per pixel column.
  const refetchSoon = debounce(() => fetchAll(), 300);
  const reaggregate = new Set();
  // Throttled, not debounced: points arrive all the time while a job runs. A
  // chart by step or of several lines is asked for anew (a request per line)
  // at most every 5 s, one line by time every 0.5 s.
  const reaggregateSoon = throttle(() => {
    if (!root.isConnected) return;  // the page was left: its charts are gone
    const now = performance.now();
    let waiting = false;
    for (const e of [...reaggregate]) {
      const every = e.kind === 'step' || e.lines.length > 1 ? 5000 : 500;
      if (now - (e.liveLoadedAt || -Infinity) < every) {
        waiting = true;
        continue;
      }
      reaggregate.delete(e);
      e.liveLoadedAt = now;
      e.stale = true;
      if (e.near) load(e);
    }
    if (waiting) reaggregateSoon();
  }, 500);
  function appendSamples(event) {
    let newSeries = false;
    for (const s of event.series || []) {
      const hit = byKey.get(api.seriesKey(s));
      if (!hit && s.namespace === 'trainwatch/Tensors') {
        if (!tensorKeys.has(api.seriesKey(s))) newSeries = true;
        else if (tensors) tensors.live(s);
        continue;
      }
      if (!hit) { newSeries = true; continue; }
      const {entry, index} = hit;
      // The expression's chart is computed anew with the metrics it reads.
      if (mathEntry && !mathEntry.refused && entry.lines[0].group === 'algorithm') reaggregate.add(mathEntry);
      // A chart not drawn yet, or away from the viewport: it asks for its data
      // (these samples included) when it comes near.
      if (!entry.chart || !entry.near) {
        if (entry.chart) entry.stale = true;
        continue;
      }
      if (!entry.data || entry.kind === 'step' || entry.lines.length > 1) {
        reaggregate.add(entry);
        continue;
      }
      const d = entry.data;
      const limit = zoom ? zoom.to : Infinity;
      for (let i = 0; i < s.t.length; i++) {
        if (s.t[i] > limit) continue;
        const x = toXk(entry.kind, s.t[i]);
        const lastX = d.xs.length ? d.xs[d.xs.length - 1] : -Infinity;
        if (x < lastX) { reaggregate.add(entry); continue; }
        if (x === lastX) continue;  // the seam: the chart's answer already ends with it
        d.xs.push(x);
        d.ys[index].push(s.v[i]);
        d.ts.push(s.t[i]);
      }
      d.raw = d.raw && d.xs.length <= 4 * entry.chart.width();
      entry.chart.setData(d.xs, d.ys, d.ts, {raw: d.raw, tier: d.tier});
      if (!zoom && entry.kind !== 'step') {
        const sp = span();
        entry.chart.uplot.setScale('x', {min: toXk(entry.kind, sp.start), max: toXk(entry.kind, Math.max(sp.end, s.t[s.t.length - 1]))});
      }
      if (d.xs.length > 4 * entry.chart.width()) reaggregate.add(entry);
      const last = series.find((x) => api.seriesKey(x) === api.seriesKey(s));
      if (last && s.t.length) last.last_ms = Math.max(last.last_ms || 0, s.t[s.t.length - 1]);
    }
    if (reaggregate.size) reaggregateSoon();
    if (newSeries) adoptSoon();
  }

  const adoptSoon = throttle(() => api.jobSeries(name).then(adopt).catch((e) => ctx.report(e)), 500);
  let polling = 0;
  let opened = false;
  const source = api.live([name], {
    open: () => { opened = true; liveNote.textContent = isRunning(record.status) ? '● live' : ''; },
    error: (state) => {
      if (state === EventSource.CLOSED && !opened) startPolling();
      else liveNote.textContent = isRunning(record.status) ? 'reconnecting…' : '';
    },
    samples: appendSamples,
    logs: (e) => logs.live(e),
    job: (rec) => {
      record = rec;
      if (gainedHosts()) return;
      updateHeader();
      renderRules();
      renderHosts();
      charts.forEach(placeMarkers);  // the drawn ones; the others on their fetch
      if (!isRunning(record.status)) liveNote.textContent = '';
    },
    reset: async () => {
      record = await api.getJob(name);
      updateHeader();
      renderRules();
      await fetchAll();
      if (tensors) await tensors.draw();
      await logs.load();
    },
  });
  ctx.onLeave(() => { source.close(); clearInterval(polling); });

  renderRules();
  await renderHosts();
  // The charts in view are built and fetched at once, without waiting for the
  // observer's first word (a frame later), and before those a screen away; the
  // page is ready when they are drawn. One layout: nothing changes meanwhile.
  const screen = innerHeight;
  const rects = charts.map((c) => {
    observer.observe(c.box);
    return c.box.getBoundingClientRect();
  });
  const inView = charts.filter((c, i) => {
    c.near = rects[i].bottom >= -screen && rects[i].top <= 2 * screen;
    return rects[i].bottom > 0 && rects[i].top < screen;
  });
  const widths = new Map(charts.map((c, i) => [c, Math.max(300, Math.round(rects[i].width) - 2)]));  // less the border
  await Promise.all(inView.map((c) => load(c, widths.get(c))));
  // The first screen is painted before the next one down is built.
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
  booting = false;
  for (const c of charts) {
    if (c.chart) measure(c);
    else if (c.near) load(c, widths.get(c));
  }
  if (tensors) tensors.drawWhenNear();
  if (params.has('at')) {
    const at = Number(params.get('at'));
    focusTime(at, false);
    await logs.openAt(at);
    window.scrollTo(0, 0);
  } else {
    await logs.load();
  }


  // A server without the live stream: poll while the job runs.
  function startPolling() {
    source.close();
    if (!isRunning(record.status)) return;
    liveNote.textContent = 'updating every 2 s';
    polling = setInterval(async () => {
      try {
        record = await api.getJob(name);
        if (gainedHosts()) return;
        adopt(await api.jobSeries(name));
      } catch { return; }
      updateHeader();
      renderRules();
      refetchSoon();
      logs.poll();
      if (!isRunning(record.status)) { clearInterval(polling); liveNote.textContent = ''; }
    }, 2000);
  }
  // Exposed for the browser tests: the page's charts by metric.
  window.__tw.job = {name, charts, get zoom() { return zoom; }, fmtValue};
}

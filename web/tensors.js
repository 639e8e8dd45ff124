// The tensor statistics the Python client's PyTorch hook sends (namespace
// trainwatch/Tensors, docs/python.md): one chart at a time, a line per tensor
// of the chosen collection for the chosen statistic, by step, so that the
// layer whose gradients vanish or whose units die stands out among the
// others. A model sends a dozen statistics for each of its tensors: a chart
// each would bury the page. The choice is in the URL (tc, ts).
import * as api from './api.js';
import {makeChart} from './charts.js';
import {updateParams} from './state.js';
import {el, throttle} from './util.js';

// What each collection is first shown by: what its rules read.
const FIRST_STAT = {gradients: 'abs_mean', weights: 'update_ratio', biases: 'update_ratio',
                    activations: 'dead_fraction', losses: 'mean', inputs: 'mean', outputs: 'mean'};
const MAX_LINES = 24;  // more lines than a chart can tell apart

// The series the panel shows: a tensor's statistics, of rank 0 (or no rank).
function isPanelSeries(s) {
  return s.group === 'tensors' && s.dimensions && s.dimensions.Tensor &&
    (s.dimensions.Rank === undefined || s.dimensions.Rank === '0');
}

// A <section> for the job's tensor series (null when it has none). `span()`
// gives the job's {start, end} in ms; `byStep`: the job has a step metric.
// While the job runs, `adopt(series)` takes tensors that appear and
// `live(series)` the samples the live stream brings: the chart is fetched
// again (at most once a second) when they are of what it shows.
export function tensorPanel(job, series, {params, logY, byStep, span, report}) {
  if (!series.some(isPanelSeries)) return null;
  const byCollection = new Map();
  let collections = [];
  const addSeries = (list) => {
    for (const s of list.filter(isPanelSeries)) {
      const c = s.dimensions.Collection || 'other';
      if (!byCollection.has(c)) byCollection.set(c, []);
      byCollection.get(c).push(s);
    }
    collections = [...byCollection.keys()].sort();
  };
  addSeries(series);
  const statsOf = (c) => [...new Set(byCollection.get(c).map((s) => s.metric))].sort();
  let collection = collections.includes(params.get('tc')) ? params.get('tc')
    : (collections.includes('gradients') ? 'gradients' : collections[0]);
  const pickStat = (wanted) => {
    const stats = statsOf(collection);
    if (stats.includes(wanted)) return wanted;
    return stats.includes(FIRST_STAT[collection]) ? FIRST_STAT[collection] : stats[0];
  };
  let stat = pickStat(params.get('ts'));

  const colSel = el('select', {id: 'tensor-collection'});
  const statSel = el('select', {id: 'tensor-stat'});
  const fillSelects = () => {
    colSel.replaceChildren(...collections.map((c) =>
      el('option', {value: c, selected: c === collection}, `${c} (${new Set(byCollection.get(c).map((s) => s.dimensions.Tensor)).size})`)));
    statSel.replaceChildren(...statsOf(collection).map((s) => el('option', {value: s, selected: s === stat}, s)));
  };
  const note = el('p', {class: 'hint', id: 'tensor-note'});
  const grid = el('div', {class: 'grid tensor-grid'});
  const section = el('section', {'aria-labelledby': 'h-tensors', class: 'panel', id: 'tensor-panel'},
    el('h2', {id: 'h-tensors'}, 'Tensor statistics'),
    el('div', {class: 'toolbar', role: 'toolbar', 'aria-label': 'Tensor statistics'},
      el('label', {for: 'tensor-collection'}, 'Collection'), colSel,
      el('label', {for: 'tensor-stat'}, 'Statistic'), statSel),
    note, grid);

  let chart = null;
  let drawing = 0;
  async function draw() {
    const mine = ++drawing;
    const lines = byCollection.get(collection).filter((s) => s.metric === stat)
      .sort((a, b) => a.dimensions.Tensor.localeCompare(b.dimensions.Tensor, undefined, {numeric: true}));
    const shown = lines.slice(0, MAX_LINES);
    note.textContent = lines.length > shown.length
      ? `The first ${shown.length} of ${lines.length} tensors, by name.` : '';
    if (chart) chart.destroy();
    grid.replaceChildren();
    const x = byStep ? 'step' : 'time';
    chart = makeChart(grid, {
      title: `${collection} · ${stat}`, xKind: x, log: logY,
      lines: shown.map((s) => ({label: s.dimensions.Tensor})),
      ariaLabel: `${stat} of each tensor of the collection ${collection}, by ${byStep ? 'step' : 'time'}`,
    });
    chart.box.dataset.metric = `tensors:${collection}:${stat}`;
    const {start, end} = span();
    const answers = await Promise.all(shown.map((s) =>
      api.chart(s, {start, end, width: chart.width(), x, job: byStep ? job : undefined})));
    if (mine !== drawing) return;  // another choice was made meanwhile
    // One x for every line (a tensor saved at other steps leaves gaps).
    const all = new Set();
    answers.forEach((a) => a.x.forEach((v) => all.add(v)));
    const xs = [...all].sort((a, b) => a - b);
    const pos = new Map(xs.map((v, i) => [v, i]));
    const times = new Array(xs.length).fill(null);
    const ys = answers.map((a) => {
      const out = new Array(xs.length).fill(null);
      a.x.forEach((v, i) => {
        out[pos.get(v)] = a.y[i];
        if (times[pos.get(v)] === null) times[pos.get(v)] = a.t[i];
      });
      return out;
    });
    chart.setData(xs, ys, times, {raw: answers.every((a) => a.raw), tier: answers[0] ? answers[0].tier : ''});
  }
  let drawn = false;  // asked to draw once: from then on it follows the job
  const redraw = () => {
    drawn = true;
    return draw().catch((e) => {
      if (chart) chart.box.dataset.error = e.message;
      report(e);
    });
  };
  const redrawSoon = throttle(redraw, 1000);
  const shows = (s) => isPanelSeries(s) && (s.dimensions.Collection || 'other') === collection &&
    s.metric === stat;
  colSel.addEventListener('change', () => {
    collection = colSel.value;
    stat = pickStat(stat);
    fillSelects();
    updateParams({tc: collection, ts: stat});
    redraw();
  });
  statSel.addEventListener('change', () => {
    stat = statSel.value;
    updateParams({tc: collection, ts: stat});
    redraw();
  });
  fillSelects();
  // Drawn when the panel comes within a screen of the viewport, as the job
  // page's other charts are (its requests do not delay the charts in view).
  const drawWhenNear = () => {
    const observer = new IntersectionObserver((seen) => {
      if (!seen.some((e) => e.isIntersecting)) return;
      observer.disconnect();
      redraw();
    }, {rootMargin: '100% 0px'});
    observer.observe(section);
  };
  // Tensors that appeared since the page opened (series of the job's series list).
  const adopt = (list) => {
    const fresh = list.filter(isPanelSeries);
    if (!fresh.length) return;
    addSeries(fresh);
    fillSelects();
    if (drawn && fresh.some(shows)) redrawSoon();
  };
  // Samples from the live stream (its series: namespace, metric, dimensions).
  const live = (s) => {
    if (drawn && s.namespace === 'trainwatch/Tensors' && shows({...s, group: 'tensors'})) redrawSoon();
  };
  return {section, draw: redraw, drawWhenNear, adopt, live};
}

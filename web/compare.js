// Compare page: one metric of several jobs overlaid, by step or relative time;
// jobs that differ only by their seed can be drawn as their mean with a
// min-max band.
import * as api from './api.js';
import {makeChart} from './charts.js';
import {hashFor, updateParams} from './state.js';
import {seriesColor, withAlpha} from './theme.js';
import {el, jobSpan} from './util.js';

const SEED = /seed/i;

// What a job is, apart from its seed: hyperparameters (or else the command)
// without the seed. Jobs with the same key differ only by seed.
export function seedlessKey(rec) {
  const hp = rec.hyperparameters || {};
  if (Object.keys(hp).length) {
    return JSON.stringify(Object.keys(hp).filter((k) => !SEED.test(k)).sort().map((k) => [k, hp[k]]));
  }
  const cmd = [...(rec.command || [])];
  const out = [];
  for (let i = 0; i < cmd.length; i++) {
    if (/^--?[\w-]*seed(=|$)/i.test(cmd[i])) { if (!cmd[i].includes('=')) i++; continue; }
    out.push(cmd[i]);
  }
  return JSON.stringify(out);
}

// Linear interpolation of (xs, ys) at x; null outside.
function interp(xs, ys, x) {
  if (!xs.length || x < xs[0] || x > xs[xs.length - 1]) return null;
  let lo = 0;
  let hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid; else hi = mid;
  }
  if (xs[lo] === x || hi === lo) return ys[lo];
  const f = (x - xs[lo]) / (xs[hi] - xs[lo]);
  return ys[lo] + f * (ys[hi] - ys[lo]);
}

export async function renderCompare(root, params, ctx) {
  const chosen = (params.get('jobs') || '').split(',').filter(Boolean);
  const xKind = params.get('x') === 'relative' ? 'relative' : 'step';
  const band = params.get('band') === '1';
  // The band around the mean of a seed group: min–max (default) or ±σ.
  const spread = params.get('spread') === 'sigma' ? 'sigma' : 'minmax';
  const jobs = await api.listJobs();
  const records = new Map();
  await Promise.all(jobs.map(async (j) => {
    try { records.set(j.name, await api.getJob(j.name)); } catch { records.set(j.name, j); }
  }));
  const seriesOf = new Map();
  await Promise.all(chosen.map(async (n) => {
    try { seriesOf.set(n, (await api.jobSeries(n)).filter((s) => s.group === 'algorithm')); } catch { seriesOf.set(n, []); }
  }));
  const metrics = [...new Set([...seriesOf.values()].flat().map((s) => s.metric))].sort();
  const metric = metrics.includes(params.get('metric')) ? params.get('metric') : metrics[0];

  root.append(el('nav', {class: 'crumbs', 'aria-label': 'Breadcrumb'}, el('a', {href: hashFor('jobs')}, 'Jobs'), ' / compare'),
    el('h1', {}, 'Compare jobs'));
  const picker = el('fieldset', {class: 'picker'}, el('legend', {}, 'Jobs'));
  for (const j of jobs) {
    const id = `cmp-${j.name}`;
    const box = el('input', {type: 'checkbox', id, value: j.name, checked: chosen.includes(j.name)});
    box.addEventListener('change', () => {
      const now = [...picker.querySelectorAll('input:checked')].map((b) => b.value);
      updateParams({jobs: now.join(',')});
      ctx.rerender();
    });
    picker.append(el('span', {class: 'check'}, box, el('label', {for: id}, j.name)));
  }
  const metricSel = el('select', {id: 'cmp-metric', disabled: !metrics.length},
    metrics.map((m) => el('option', {value: m, selected: m === metric}, m)));
  const xSel = el('select', {id: 'cmp-x'},
    [['step', 'step'], ['relative', 'relative time']].map(([v, l]) => el('option', {value: v, selected: v === xKind}, l)));
  const bandBox = el('input', {type: 'checkbox', id: 'cmp-band', checked: band});
  metricSel.addEventListener('change', () => { updateParams({metric: metricSel.value}); ctx.rerender(); });
  xSel.addEventListener('change', () => { updateParams({x: xSel.value}); ctx.rerender(); });
  bandBox.addEventListener('change', () => { updateParams({band: bandBox.checked ? '1' : ''}); ctx.rerender(); });
  const spreadSel = el('select', {id: 'cmp-spread', disabled: !band},
    [['minmax', 'min–max'], ['sigma', 'mean ± σ']].map(([v, l]) => el('option', {value: v, selected: v === spread}, l)));
  spreadSel.addEventListener('change', () => {
    updateParams({spread: spreadSel.value === 'sigma' ? 'sigma' : ''});
    ctx.rerender();
  });
  root.append(picker, el('div', {class: 'toolbar'},
    el('label', {for: 'cmp-metric'}, 'Metric'), metricSel,
    el('label', {for: 'cmp-x'}, 'x-axis'), xSel,
    el('span', {class: 'check'}, bandBox, el('label', {for: 'cmp-band'}, 'Seeds as mean with a band')),
    el('label', {for: 'cmp-spread'}, 'Band'), spreadSel));
  const area = el('section', {class: 'panel', 'aria-label': 'Comparison chart'});
  root.append(area);
  if (!chosen.length || !metric) {
    area.append(el('p', {class: 'empty'}, chosen.length ? 'These jobs have no metrics.' : 'Choose jobs to compare.'));
    return;
  }

  // Each job's line of the metric.
  const lines = [];
  await Promise.all(chosen.map(async (n) => {
    const s = (seriesOf.get(n) || []).find((x) => x.metric === metric);
    const rec = records.get(n);
    if (!s || !rec) return;
    const sp = jobSpan(rec);
    const req = {x: xKind === 'step' ? 'step' : 'time', job: xKind === 'step' ? n : undefined,
                 start: sp.start, end: Math.max(sp.end, (s.last_ms || 0) + 1), width: 1000};
    try {
      const a = await api.chart(s, req);
      const xs = xKind === 'step' ? a.x : a.t.map((t) => (t - sp.start) / 1000);
      lines.push({job: n, xs, ys: a.y, key: seedlessKey(rec)});
    } catch (e) {
      ctx.report(e);
    }
  }));
  lines.sort((a, b) => chosen.indexOf(a.job) - chosen.indexOf(b.job));

  // Seed groups: jobs with the same seedless key (two or more) become one mean line.
  const groups = new Map();
  for (const l of lines) {
    if (!groups.has(l.key)) groups.set(l.key, []);
    groups.get(l.key).push(l);
  }
  const drawn = [];  // {label, xs, ys, band?: {lo, hi}}
  for (const g of groups.values()) {
    if (band && g.length > 1) {
      const xs = [...new Set(g.flatMap((l) => l.xs))].sort((a, b) => a - b);
      const mean = [];
      const lo = [];
      const hi = [];
      for (const x of xs) {
        const vals = g.map((l) => interp(l.xs, l.ys, x)).filter((v) => v !== null);
        if (!vals.length) { mean.push(null); lo.push(null); hi.push(null); continue; }
        const m = vals.reduce((a, b) => a + b, 0) / vals.length;
        mean.push(m);
        if (spread === 'sigma') {
          // The spread of the seeds (population standard deviation).
          const sd = Math.sqrt(vals.reduce((a, v) => a + (v - m) * (v - m), 0) / vals.length);
          lo.push(m - sd);
          hi.push(m + sd);
        } else {
          lo.push(Math.min(...vals));
          hi.push(Math.max(...vals));
        }
      }
      drawn.push({label: `mean of ${g.map((l) => l.job).join(', ')}${spread === 'sigma' ? ' (± σ)' : ' (min–max)'}`,
                  xs, ys: mean, band: {lo, hi}});
    } else {
      for (const l of g) drawn.push({label: l.job, xs: l.xs, ys: l.ys});
    }
  }
  const seedGroups = [...groups.values()].filter((g) => g.length > 1);
  if (!band && seedGroups.length) {
    area.append(el('p', {class: 'hint'}, `${seedGroups.map((g) => g.map((l) => l.job).join(' + ')).join('; ')} differ only by seed: tick “Seeds as mean with a band”.`));
  }

  const xs = [...new Set(drawn.flatMap((d) => d.xs))].sort((a, b) => a - b);
  const pos = new Map(xs.map((x, i) => [x, i]));
  const align = (d, ys) => {
    const out = new Array(xs.length).fill(null);
    d.xs.forEach((x, i) => { out[pos.get(x)] = ys[i]; });
    return out;
  };
  const lineSpecs = drawn.map((d, i) => ({label: d.label, color: seriesColor(i)}));
  const bands = [];
  let seriesIdx = drawn.length + 1;
  drawn.forEach((d, i) => {
    if (!d.band) return;
    const color = seriesColor(i);
    bands.push({
      series: [{label: `${d.label} ${spread === 'sigma' ? '+σ' : 'max'}`, stroke: withAlpha(color, 0.4), width: 1, spanGaps: true, points: {show: false}},
               {label: `${d.label} ${spread === 'sigma' ? '−σ' : 'min'}`, stroke: withAlpha(color, 0.4), width: 1, spanGaps: true, points: {show: false}}],
      band: {series: [seriesIdx, seriesIdx + 1], fill: withAlpha(color, 0.15)},
      data: [align(d, d.band.hi), align(d, d.band.lo)],
    });
    seriesIdx += 2;
  });
  const chart = makeChart(area, {title: metric, xKind, lines: lineSpecs, bands, height: 360,
                                  ariaLabel: `${metric} of ${chosen.join(', ')}`});
  chart.box.dataset.lines = String(drawn.length);
  chart.setData(xs, drawn.map((d) => align(d, d.ys)), xs, {raw: false});
  window.__tw.compare = {chart, drawn};
}

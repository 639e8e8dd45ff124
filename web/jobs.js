// Jobs page: every job with its status, start, duration, final metrics, rule
// results and a sparkline of its main metric; filter, sort, search; live.
import * as api from './api.js';
import {hashFor, updateParams} from './state.js';
import {el, fmtDuration, fmtTime, fmtValue, jobSpan, ruleCounts, isRunning, debounce} from './util.js';
import {cssVar} from './theme.js';

const STATUSES = ['InProgress', 'Completed', 'Failed', 'Stopping', 'Stopped'];
const COLUMNS = [
  {key: 'name', label: 'Job'},
  {key: 'status', label: 'Status'},
  {key: 'start', label: 'Started'},
  {key: 'duration', label: 'Duration'},
  {key: null, label: 'Final metrics'},
  {key: 'rules', label: 'Rules'},
  {key: null, label: 'Main metric'},
];

// The metric a job is summed up by: its first final metric, else its first
// metric definition.
export function mainMetric(record) {
  if (record.final_metrics && record.final_metrics.length) return record.final_metrics[0].name;
  const defs = record.metric_definitions || [];
  return defs.length ? (defs[0].name || defs[0].Name) : null;
}

function sortValue(key, rec) {
  const span = jobSpan(rec);
  switch (key) {
    case 'name': return rec.name;
    case 'status': return rec.status;
    case 'duration': return span.end - span.start;
    case 'rules': return ruleCounts(rec).IssuesFound || 0;
    default: return span.start;
  }
}

function drawSparkline(canvas, answer) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const xs = answer.x;
  const ys = answer.y;
  if (!xs || xs.length === 0) return;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of ys) { if (v < lo) lo = v; if (v > hi) hi = v; }
  if (hi === lo) { hi += 1; lo -= 1; }
  const x0 = xs[0];
  const x1 = xs[xs.length - 1];
  const sx = (x) => ((x - x0) / Math.max(1e-9, x1 - x0)) * (w - 2) + 1;
  const sy = (y) => h - 2 - ((y - lo) / (hi - lo)) * (h - 4);
  ctx.strokeStyle = cssVar('--accent') || '#3b82f6';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  xs.forEach((x, i) => (i ? ctx.lineTo(sx(x), sy(ys[i])) : ctx.moveTo(sx(x), sy(ys[i]))));
  ctx.stroke();
}

export async function renderJobs(root, params, ctx) {
  const q = params.get('q') || '';
  const status = params.get('status') || '';

  const search = el('input', {type: 'search', id: 'job-search', value: q, placeholder: 'name contains…'});
  const statusSel = el('select', {id: 'job-status'},
    el('option', {value: ''}, 'any status'),
    STATUSES.map((s) => el('option', {value: s, selected: s === status}, s)));
  const liveNote = el('span', {class: 'live-note', role: 'status', 'aria-live': 'polite'});
  root.append(el('h1', {}, 'Jobs'),
    el('div', {class: 'toolbar'},
      el('label', {for: 'job-search'}, 'Search'), search,
      el('label', {for: 'job-status'}, 'Status'), statusSel,
      el('a', {href: hashFor('compare'), class: 'button'}, 'Compare jobs…'), liveNote));

  const table = el('table', {class: 'jobs'});
  const thead = el('thead');
  const headRow = el('tr');
  function drawHeader() {
    const p = new URLSearchParams(location.hash.split('?')[1] || '');
    const key = p.get('sort') || 'start';
    const order = p.get('dir') || 'desc';
    headRow.replaceChildren();
    for (const c of COLUMNS) {
      if (!c.key) { headRow.append(el('th', {scope: 'col'}, c.label)); continue; }
      const active = c.key === key;
      const th = el('th', {scope: 'col', 'aria-sort': active ? (order === 'asc' ? 'ascending' : 'descending') : 'none'});
      th.append(el('button', {class: 'sort', type: 'button',
        onclick: () => {
          updateParams({sort: c.key, dir: active && order === 'desc' ? 'asc' : 'desc'});
          drawHeader();
          refresh();
        }}, c.label, active ? (order === 'asc' ? ' ▲' : ' ▼') : ''));
      headRow.append(th);
    }
  }
  drawHeader();
  thead.append(headRow);
  const tbody = el('tbody');
  table.append(thead, tbody);
  const empty = el('p', {class: 'empty'});
  root.append(table, empty);

  search.addEventListener('input', debounce(() => { updateParams({q: search.value}); refresh(); }, 200));
  statusSel.addEventListener('change', () => { updateParams({status: statusSel.value}); refresh(); });

  const records = new Map();  // name -> record
  const sparkCache = new Map();  // name -> answer

  // A record replaces the one held unless that one is newer (the live stream
  // runs while the list is read, and either may come first); true when it
  // changed anything.
  function keep(rec) {
    const held = records.get(rec.name);
    if (held && (held.last_modified_ms || 0) > (rec.last_modified_ms || 0)) return false;
    if (held && JSON.stringify(held) === JSON.stringify(rec)) return false;
    records.set(rec.name, rec);
    return true;
  }

  // True when a record changed.
  async function loadRecords() {
    const list = await api.listJobs();
    const changed = await Promise.all(list.map(async (j) => {
      try {
        return keep(await api.getJob(j.name));
      } catch (e) {
        return keep(j);
      }
    }));
    return changed.some(Boolean);
  }

  async function sparkline(rec, canvas) {
    const metric = mainMetric(rec);
    if (!metric) return;
    let answer = sparkCache.get(rec.name);
    if (!answer || isRunning(rec.status)) {
      const span = jobSpan(rec);
      try {
        answer = await api.chart({namespace: api.NAMESPACE, metric, dimensions: {TrainingJobName: rec.name}},
                                 {start: span.start, end: span.end + 1, width: 120});
      } catch {
        return;
      }
      sparkCache.set(rec.name, answer);
    }
    drawSparkline(canvas, answer);
    canvas.dataset.points = String(answer.x.length);
  }

  function row(rec) {
    const span = jobSpan(rec);
    const finals = (rec.final_metrics || []).slice(0, 4).map((m) =>
      el('span', {class: 'metric'}, `${m.name} `, el('b', {}, fmtValue(m.value))));
    const counts = ruleCounts(rec);
    const rules = Object.keys(counts).length
      ? Object.entries(counts).map(([s, n]) => el('span', {class: `pill rule-${s}`}, `${s} ${n}`))
      : '—';
    const canvas = el('canvas', {width: 120, height: 28, class: 'spark', role: 'img',
                                 'aria-label': `${mainMetric(rec) || 'no metric'} of ${rec.name}`});
    sparkline(rec, canvas);
    return el('tr', {dataset: {job: rec.name}},
      el('th', {scope: 'row'}, el('a', {href: hashFor('job', rec.name)}, rec.name)),
      el('td', {}, el('span', {class: `status status-${rec.status}`}, rec.status)),
      el('td', {}, fmtTime(span.start)),
      el('td', {}, fmtDuration(span.end - span.start)),
      el('td', {class: 'finals'}, finals.length ? finals : '—'),
      el('td', {class: 'rules'}, rules),
      el('td', {}, canvas));
  }

  function refresh() {
    const text = search.value.toLowerCase();
    const st = statusSel.value;
    const {params: p} = {params: new URLSearchParams(location.hash.split('?')[1] || '')};
    const key = p.get('sort') || 'start';
    const asc = (p.get('dir') || 'desc') === 'asc';
    const rows = [...records.values()]
      .filter((r) => (!text || r.name.toLowerCase().includes(text)) && (!st || r.status === st))
      .sort((a, b) => {
        const va = sortValue(key, a);
        const vb = sortValue(key, b);
        const c = va < vb ? -1 : va > vb ? 1 : 0;
        return asc ? c : -c;
      });
    tbody.replaceChildren(...rows.map(row));
    empty.textContent = rows.length ? '' : (records.size ? 'No job matches.' : 'No jobs yet: start one with `trainwatch run`.');
  }

  // Live: every job's changes (no job parameter: only `job` events), opened
  // before the list is read, so that a job that ends meanwhile is not shown
  // as it was when read.
  let loaded = false;
  let opened = false;
  let polling = 0;
  const source = api.live([], {
    open: () => {
      // What changed between the list's read and the stream's start came in
      // neither: the list is read again once, now that the stream runs.
      if (!opened && loaded) loadRecords().then((changed) => { if (changed) refresh(); });
      opened = true;
      liveNote.textContent = '● live';
    },
    error: (state) => {
      // A server without the live stream: read the jobs again every 5 s.
      if (state === EventSource.CLOSED && !opened) {
        source.close();
        liveNote.textContent = 'updating every 5 s';
        polling = setInterval(async () => { await loadRecords(); refresh(); }, 5000);
      } else {
        liveNote.textContent = 'reconnecting…';
      }
    },
    job: (rec) => {
      if (!rec || !rec.name) return;
      const before = records.get(rec.name);
      if (!keep(rec) || !loaded) return;
      const old = tbody.querySelector(`tr[data-job="${CSS.escape(rec.name)}"]`);
      // In place while the row still passes the status filter and its place
      // in the order holds; else the table is built again.
      if (old && before && inPlace(before, rec)) old.replaceWith(row(rec));
      else refresh();
    },
    reset: async () => { await loadRecords(); refresh(); },
  });
  ctx.onLeave(() => { source.close(); clearInterval(polling); });

  // An update may move a row out of the status filter, or to another place
  // in the order (its start, status, duration or issues changed).
  function inPlace(before, rec) {
    const sort = new URLSearchParams(location.hash.split('?')[1] || '').get('sort') || 'start';
    const st = statusSel.value;
    return (!st || rec.status === st) && sortValue(sort, before) === sortValue(sort, rec);
  }

  await loadRecords();
  loaded = true;
  refresh();
}

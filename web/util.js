// Small helpers shared by the pages: formatting, DOM building, smoothing.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtClock(ms) {
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function fmtDuration(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(ms) || ms < 0) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

export function fmtValue(v) {
  if (v === undefined || v === null || !Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

// Exponential moving average with TensorBoard's debiasing; nulls pass through.
export function ema(values, weight) {
  const out = new Array(values.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    last = last * weight + (1 - weight) * v;
    n++;
    out[i] = last / (1 - Math.pow(weight, n));
  }
  return out;
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// Runs fn at most once per `ms`, `ms` after the first call of a burst, however
// long the burst lasts (a debounce would wait for a pause that a live stream
// never makes).
export function throttle(fn, ms) {
  let timer = 0;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = 0; fn(); }, ms);
  };
}

// When a job started and ended (ended: now while it runs).
export function jobSpan(record) {
  const start = record.training_start_ms || record.creation_ms;
  const end = record.training_end_ms || (isRunning(record.status) ? Date.now() : record.last_modified_ms);
  return {start, end: Math.max(end || start, start)};
}

export function isRunning(status) {
  return status === 'InProgress' || status === 'Stopping';
}

// Counts of rule results by status: {IssuesFound: 2, NoIssuesFound: 3}.
export function ruleCounts(record) {
  const counts = {};
  for (const r of record.rule_statuses || []) {
    const status = r.status || r.RuleEvaluationStatus || 'Unknown';
    counts[status] = (counts[status] || 0) + 1;
  }
  return counts;
}

export function findingsOf(record) {
  const out = [];
  for (const r of record.rule_statuses || []) {
    for (const f of r.findings || []) out.push({...f, rule: f.rule || r.rule || r.name});
  }
  out.sort((a, b) => (a.t_ms || 0) - (b.t_ms || 0));
  return out;
}

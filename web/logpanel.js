// The log of a job: its lines with search and follow; a line links back to
// its moment on the charts, and the charts open the lines around a moment.
import * as api from './api.js';
import {el, fmtClock, debounce} from './util.js';

const PAGE = 500;

// opts: {record, stream, query, follow, onLine(tMs), onChange({q, follow, stream})}
export function makeLogPanel(target, opts) {
  const streams = [];
  for (const h of opts.record.hosts && opts.record.hosts.length ? opts.record.hosts : [opts.record]) {
    if (h.log_stream) streams.push(h.log_stream);
  }
  streams.push(`${opts.record.name}/rules`);
  let stream = streams.includes(opts.stream) ? opts.stream : streams[0];

  const search = el('input', {type: 'search', id: 'log-search', value: opts.query || '',
                              placeholder: 'text in the line…'});
  const follow = el('input', {type: 'checkbox', id: 'log-follow', checked: opts.follow});
  const streamSel = el('select', {id: 'log-stream'}, streams.map((s) =>
    el('option', {value: s, selected: s === stream}, s)));
  const earlier = el('button', {type: 'button', id: 'log-earlier'}, 'Earlier lines');
  const status = el('span', {class: 'log-status', role: 'status', 'aria-live': 'polite'});
  const list = el('ol', {class: 'log', id: 'log-lines', tabindex: '0', 'aria-label': 'Log lines'});
  target.append(
    el('div', {class: 'toolbar'},
      el('label', {for: 'log-stream'}, 'Stream'), streamSel,
      el('label', {for: 'log-search'}, 'Search'), search,
      el('span', {class: 'check'}, follow, el('label', {for: 'log-follow'}, 'Follow')),
      earlier, status),
    list);

  let lines = [];        // {t_ms, ingestion_ms, message}, ascending
  let next = null;       // the cursor after the last line read (for polling)
  let prev = null;       // the cursor before the first line read (for earlier lines)
  let highlight = null;  // t_ms of the line to mark
  let loading = false;   // reading the history: live lines wait in `pending`
  let pending = [];
  // The history's newest lines by key, counted: the live stream may still bring
  // them after the read (a line stored just before it, sent just after).
  let overlap = new Map();
  // A line as both the history and the live stream give it (the live
  // stream's ingestion_ms is its own, a few ms off the stored one).
  const lineKey = (l) => `${l.t_ms}|${l.message}`;

  function matches(line) {
    const q = search.value;
    return !q || line.message.toLowerCase().includes(q.toLowerCase());
  }

  function lineNode(line) {
    const li = el('li', {dataset: {t: String(line.t_ms)}, class: line.t_ms === highlight ? 'hl' : undefined});
    li.append(
      el('button', {type: 'button', class: 'to-chart', title: 'Show this moment on the charts',
                    'aria-label': `Show ${fmtClock(line.t_ms)} on the charts`,
                    onclick: () => opts.onLine && opts.onLine(line.t_ms)}, fmtClock(line.t_ms)),
      el('span', {class: 'msg'}, line.message));
    return li;
  }

  function render() {
    const shown = lines.filter(matches);
    list.replaceChildren(...shown.map(lineNode));
    status.textContent = `${shown.length} of ${lines.length} lines`;
    if (highlight !== null) {
      const node = list.querySelector('li.hl');
      if (node) node.scrollIntoView({block: 'center'});
    } else if (follow.checked) {
      list.scrollTop = list.scrollHeight;
    }
  }

  function appendLines(events) {
    if (!events.length) return;
    // The live stream resumes without duplicates (its contract): every event is new.
    let added = 0;
    for (const e of events) {
      lines.push(e);
      added++;
      if (matches(e)) {
        list.append(lineNode(e));
      }
    }
    if (added && lines.length > 20000) {
      lines = lines.slice(-10000);
      prev = null;  // earlier lines are read back from the first line's time
      render();
      return;
    }
    status.textContent = `${lines.filter(matches).length} of ${lines.length} lines`;
    if (follow.checked) list.scrollTop = list.scrollHeight;
  }

  // The last lines of the stream (following), or the ones around `atMs`.
  async function load(atMs = null) {
    loading = true;
    try {
      await read(atMs);
    } finally {
      loading = false;
    }
    const held = pending;
    pending = [];
    overlap = new Map();
    if (atMs === null) {
      for (const l of lines.slice(-PAGE * 2)) overlap.set(lineKey(l), (overlap.get(lineKey(l)) || 0) + 1);
      appendLines(fresh(held));
    }
  }

  // Live lines less those the history already holds: as many of each as it
  // holds are dropped (a line printed twice in one millisecond is still shown twice).
  function fresh(events) {
    if (!overlap.size) return events;
    return events.filter((e) => {
      const n = overlap.get(lineKey(e)) || 0;
      if (n > 0) overlap.set(lineKey(e), n - 1);
      return n === 0;
    });
  }

  async function read(atMs) {
    highlight = atMs;
    // Following: the stream's last lines, read back from its end.
    const params = atMs === null ? {stream, limit: PAGE, tail: 1} :
      {stream, limit: PAGE, start: Math.max(0, atMs - 30000), end: atMs + 30000};
    let page;
    try {
      page = await api.logEvents(params);
    } catch (e) {
      status.textContent = e.status === 404 ? 'no lines yet' : e.message;
      lines = [];
      list.replaceChildren();
      return;
    }
    lines = page.events || [];
    next = page.next || null;
    prev = page.prev || null;
    render();
  }

  // The page of lines just before the first one shown.
  async function loadEarlier() {
    if (!lines.length) { status.textContent = 'no earlier lines'; return; }
    const params = {stream, limit: PAGE, tail: 1};
    if (prev) params.before = prev; else params.end = lines[0].t_ms;
    let page;
    try {
      page = await api.logEvents(params);
    } catch (e) {
      status.textContent = e.message;
      return;
    }
    const events = page.events || [];
    if (!events.length) { status.textContent = `no earlier lines; ${lines.length} lines`; return; }
    prev = page.prev || null;
    const keep = list.scrollHeight - list.scrollTop;  // the lines in view stay in view
    lines = events.concat(lines);
    render();
    list.scrollTop = list.scrollHeight - keep;
  }

  async function poll() {
    if (!next) return load();
    try {
      const page = await api.logEvents({stream, limit: PAGE, after: next});
      next = page.next || next;
      appendLines(page.events || []);
    } catch { /* the next poll tries again */ }
  }

  const changed = () => opts.onChange && opts.onChange({q: search.value, follow: follow.checked, stream});
  search.addEventListener('input', debounce(() => { render(); changed(); }, 150));
  follow.addEventListener('change', () => {
    highlight = null;
    changed();
    if (follow.checked) load();
  });
  streamSel.addEventListener('change', () => { stream = streamSel.value; changed(); load(); });
  earlier.addEventListener('click', () => loadEarlier());

  return {
    load, poll,
    // Live lines of a stream (the live stream's `logs` event). Until the
    // history is read, they wait; then the ones the history already holds
    // (lines that arrived between the stream's start and the read, or were
    // stored before the read and sent after it) are dropped.
    live(event) {
      if (event.stream !== stream) return;
      if (loading) { pending.push(...(event.events || [])); return; }
      if (highlight !== null && !follow.checked) return;  // looking at a past moment
      appendLines(fresh(event.events || []));
    },
    // Opens the lines around a moment (a chart point was clicked).
    async openAt(tMs) {
      follow.checked = false;
      changed();
      await load(tMs);
      target.scrollIntoView({block: 'start'});
      const node = list.querySelector('li.hl') || nearest(tMs);
      if (node) { node.classList.add('hl'); node.scrollIntoView({block: 'center'}); }
    },
    get stream() { return stream; },
  };

  function nearest(tMs) {
    let best = null;
    let bestD = Infinity;
    for (const li of list.children) {
      const d = Math.abs(Number(li.dataset.t) - tMs);
      if (d < bestD) { bestD = d; best = li; }
    }
    return best;
  }
}

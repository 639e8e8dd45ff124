// The HTTP API the dashboard reads (docs/api.md, "Dashboard"). Every call is a
// same-origin request: the dashboard is served by the trainwatch server itself.

export const NAMESPACE = '/aws/sagemaker/TrainingJobs';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function getJSON(path, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const item of Array.isArray(v) ? v : [v]) query.append(k, String(item));
  }
  const qs = query.toString();
  const response = await fetch(qs ? `${path}?${qs}` : path, {headers: {Accept: 'application/json'}});
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, `${path}: the answer is not JSON (HTTP ${response.status})`);
  }
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    throw new ApiError(response.status, `${path}: ${message}`);
  }
  return body;
}

export async function postJSON(path, body) {
  const response = await fetch(path, {method: 'POST', body: JSON.stringify(body),
                                      headers: {'Content-Type': 'application/json', Accept: 'application/json'}});
  const text = await response.text();
  let answer = null;
  try {
    answer = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, `${path}: the answer is not JSON (HTTP ${response.status})`);
  }
  if (!response.ok) {
    throw new ApiError(response.status, answer && answer.error ? answer.error.message : `HTTP ${response.status}`);
  }
  return answer;
}

// CloudWatch's GetMetricData, metric math included (contract: /api/v1/metrics/data).
export const metricData = (input) => postJSON('/api/v1/metrics/data', input);

// A time (ms since the epoch) as query parameters take it: ISO 8601, exact to the ms
// (a bare number there means epoch seconds).
export function isoTime(ms) {
  return ms === undefined || ms === null ? undefined : new Date(ms).toISOString();
}

export const listJobs = (params = {}) => getJSON('/api/v1/jobs', params).then((b) => b.jobs || []);
export const getJob = (name) => getJSON(`/api/v1/jobs/${encodeURIComponent(name)}`);
export const jobSeries = (name) =>
  getJSON(`/api/v1/jobs/${encodeURIComponent(name)}/series`).then((b) => b.series || []);

// The dimension parameters of a series: the exact set, as /api/v1/chart wants it.
export function dimensionParams(dimensions) {
  return Object.entries(dimensions || {}).map(([k, v]) => `${k}=${v}`);
}

// M4-aggregated points of one series (contract: /api/v1/chart).
export function chart(series, {start, end, width, x = 'time', job} = {}) {
  return getJSON('/api/v1/chart', {
    namespace: series.namespace,
    metric: series.metric,
    dimension: dimensionParams(series.dimensions),
    unit: series.unit,
    start: start !== undefined ? isoTime(Math.floor(start)) : undefined,
    end: end !== undefined ? isoTime(Math.ceil(end)) : undefined,
    width: Math.max(1, Math.min(4000, Math.round(width || 800))),
    x,
    job,
  });
}

export function logEvents({group = NAMESPACE, stream, start, end, limit, after, tail, before}) {
  return getJSON('/api/v1/logs/events',
                 {group, stream, start: isoTime(start), end: isoTime(end), limit, after, tail, before});
}

// A job's series key as one string (maps live samples to their chart).
export function seriesKey(s) {
  const dims = Object.keys(s.dimensions || {}).sort().map((k) => `${k}=${s.dimensions[k]}`);
  return `${s.namespace}|${s.metric}|${dims.join(',')}|${s.unit || ''}`;
}

// The live stream (contract: /api/v1/live). EventSource reconnects by itself and
// sends Last-Event-ID, so the server resumes after the last event seen. It gives
// up for good on an answer other than 200 (a server restarting answers 503, or
// nothing the browser takes): then a new stream is opened, 1 s, 2 s, ... at most
// 30 s later, and once it is open `reset` tells the page to refetch (the new
// stream starts from the newest data). A stream never opened is not retried:
// the page falls back to polling (a server without the live stream), as it does
// for a server whose health says its stream carries nothing (a follower of a
// folder another process writes). The stream is opened at once, before that
// answer, so that nothing sent meanwhile is missed; `open` waits for it.
// handlers: {samples, logs, job, reset, open, error(readyState)}; returns {close()}.
export function live(jobs, handlers) {
  const query = new URLSearchParams();
  for (const j of jobs) query.append('job', j);
  const qs = query.toString();
  const url = qs ? `/api/v1/live?${qs}` : '/api/v1/live';
  let source = null;
  let opened = false;   // some stream was open once
  let replaced = false; // the current stream replaces one that gave up
  let closed = false;
  let failures = 0;
  let timer = 0;
  const streams = getJSON('/api/v1/health').then((h) => !(h && h.live_updates === false), () => true);
  const stop = () => {
    closed = true;
    clearTimeout(timer);
    source.close();
  };
  const connect = () => {
    const s = new EventSource(url);
    source = s;
    for (const type of ['samples', 'logs', 'job', 'reset']) {
      s.addEventListener(type, (e) => {
        let data;
        try {
          data = JSON.parse(e.data);
        } catch {
          return;
        }
        if (handlers[type]) handlers[type](data, e.lastEventId);
      });
    }
    s.addEventListener('open', () => streams.then((live) => {
      if (!live || closed || s !== source) return;
      opened = true;
      failures = 0;
      if (handlers.open) handlers.open();
      if (replaced) {
        replaced = false;
        if (handlers.reset) handlers.reset({reason: 'reconnected'});
      }
    }));
    s.addEventListener('error', () => {
      if (s.readyState === EventSource.CLOSED && opened && !closed) {
        replaced = true;
        timer = setTimeout(connect, Math.min(30000, 1000 * 2 ** failures++));
        if (handlers.error) handlers.error(EventSource.CONNECTING);
        return;
      }
      if (handlers.error) handlers.error(s.readyState);
    });
  };
  connect();
  streams.then((live) => {
    if (live || closed) return;
    stop();
    if (handlers.error) handlers.error(EventSource.CLOSED);  // never opened: the page polls
  });
  return {close: stop};
}

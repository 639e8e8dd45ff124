// The job page's hosts table, for a job on several hosts (the straggler
// view): per host its status, step, pace over the last 2 minutes of the job's
// data (as the Straggler rule measures it), CPU and GPU, and whether Straggler
// found it lagging.

import * as api from './api.js';
import {el, fmtValue, findingsOf} from './util.js';

const PACE_MS = 120000;

// A host's own steps (trainwatch/JobEvents HostStep {Host}).
export const isHostStep = (s) => s.namespace === 'trainwatch/JobEvents' && s.metric === 'HostStep';

// The table's element (id hosts-body), or null when the job's series could
// not be read.
export async function hostsBody(record) {
  let now;
  try {
    now = await api.jobSeries(record.name);
  } catch (e) {
    return null;
  }
  const hostName = (h) => h.host || `${record.name}/algo-${h.host_index}`;
  const own = (metric, host) => now.find((x) => x.metric === metric && (x.dimensions || {}).Host === host &&
                                                Object.keys(x.dimensions).length === 1);
  const end = Math.max(0, ...now.filter(isHostStep).map((x) => x.last_ms || 0));
  const lagging = new Set(findingsOf(record).filter((f) => f.reason === 'straggler').map((f) => f.subject));
  const rows = await Promise.all(record.hosts.map(async (h) => {
    const host = hostName(h);
    const steps = now.find((x) => isHostStep(x) && x.dimensions.Host === host);
    let pace = null;
    if (steps && end) {
      try {
        const a = await api.chart(steps, {start: end - PACE_MS, end: end + 1, width: 60});
        const n = a.t.length;
        pace = n >= 2 ? (a.y[n - 1] - a.y[0]) / ((end - a.t[0]) / 1000) : 0;
        if (!Number.isFinite(pace)) pace = null;
      } catch {
        pace = null;
      }
    }
    return {h, host, steps, pace, cpu: own('CPUUtilization', host), gpu: own('GPUUtilization', host)};
  }));
  const pct = (x) => (x && Number.isFinite(x.last_value) ? `${x.last_value.toFixed(1)} %` : '–');
  const table = el('table', {class: 'hosts-table', id: 'hosts-table'},
    el('caption', {}, 'Pace over the last 2 minutes of the job\'s data; CPU and GPU: the latest sample; ' +
    'Straggler: the rule found the host lagging during the run.'),
    el('thead', {}, el('tr', {}, ['Host', 'Status', 'Step', 'Steps/s', 'Step time', 'CPU', 'GPU', 'Straggler']
      .map((t) => el('th', {scope: 'col'}, t)))));
  const tb = el('tbody');
  for (const r of rows) {
    const suffix = r.host.split('/').pop();
    const flagged = lagging.has(`host ${suffix}`);
    tb.append(el('tr', {class: flagged ? 'straggler' : '', 'data-host': suffix},
      el('th', {scope: 'row'}, suffix),
      el('td', {}, el('span', {class: `status status-${r.h.status}`}, r.h.status)),
      el('td', {}, r.steps && r.steps.last_value !== null ? fmtValue(r.steps.last_value) : '–'),
      el('td', {}, r.pace === null ? '–' : r.pace.toFixed(2)),
      el('td', {}, r.pace ? `${Number((1 / r.pace).toPrecision(3))} s` : '–'),
      el('td', {}, pct(r.cpu)),
      el('td', {}, pct(r.gpu)),
      el('td', {}, flagged ? el('span', {class: 'pill rule-IssuesFound'}, 'found lagging') : '')));
  }
  table.append(tb);
  const body = el('div', {id: 'hosts-body'}, table);
  if (!rows.some((r) => r.steps)) {
    body.append(el('p', {class: 'empty'}, 'No host reported steps: define the step metric (--metric \'step=step (\\d+)\') to compare their pace.'));
  }
  return body;
}

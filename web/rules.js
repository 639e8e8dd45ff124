// The job page's rules panel: each rule's status, and the findings, each
// with a button that takes the charts to its time.

import {el, fmtClock, findingsOf} from './util.js';

// As the report counts them (model/rule_result.h): a rule that found no
// issue because it had nothing to check says so with a "no_data" warning, and
// warnings are not issues.
function checkedNothing(r) {
  return r.status === 'NoIssuesFound' &&
    (r.findings || []).some((f) => f.severity === 'warning' && f.reason === 'no_data');
}
function issueCount(r) {
  const findings = r.findings || [];
  const warnings = findings.filter((f) => f.severity === 'warning').length;
  return (r.findings_total ?? findings.length) - warnings;
}

// The panel's body (id rules-body); `focus(tMs)` shows a finding's time on
// the charts.
export function rulesBody(record, focus) {
  const statuses = record.rule_statuses || [];
  const body = el('div', {id: 'rules-body'});
  if (!statuses.length) body.append(el('p', {class: 'empty'}, 'No rules watch this job.'));
  const table = el('table', {class: 'rules-table'},
    el('thead', {}, el('tr', {}, ['Rule', 'Status', 'Issues', 'Details'].map((h) => el('th', {scope: 'col'}, h)))));
  const tb = el('tbody');
  for (const r of statuses) {
    tb.append(el('tr', {},
      el('th', {scope: 'row'}, r.configuration_name || r.rule),
      el('td', {class: 'rule-status'}, el('span', {class: `pill rule-${r.status}`}, r.status),
        checkedNothing(r) ? el('span', {class: 'empty'}, ' no data') : null),
      el('td', {}, String(issueCount(r))),
      el('td', {}, r.details || '')));
  }
  table.append(tb);
  if (statuses.length) body.append(table);
  const findings = findingsOf(record);
  if (findings.length) {
    const ol = el('ol', {class: 'findings', id: 'findings'});
    for (const f of findings) {
      ol.append(el('li', {class: `sev-${(f.severity || '').toLowerCase()}`},
        el('button', {type: 'button', class: 'to-chart', onclick: () => focus(f.t_ms)},
          `${fmtClock(f.t_ms)}${f.step !== undefined && f.step !== null ? ` · step ${f.step}` : ''}`),
        ' ', el('b', {}, f.rule), ': ', f.message || f.reason || '',
        f.recommendation ? el('div', {class: 'rec'}, f.recommendation) : null));
    }
    body.append(el('h3', {}, 'Findings'), ol);
  }
  return body;
}

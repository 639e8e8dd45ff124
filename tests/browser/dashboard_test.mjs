// The dashboard in a real browser (Debian's Chromium, driven by playwright-core):
// a `trainwatch server` on a temporary data folder, demo jobs run through it and
// 1,000,000 imported samples with a single-sample spike; then every page is
// opened in the light and the dark theme and checked as a user would see it.
// Screenshots of every page go to --artifacts. Exit 77 (skip) without Chromium.
//
//   node dashboard_test.mjs --trainwatch BIN --source REPO --artifacts DIR
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {parseArgs, skip, freePort, waitFor, sleep, Server, runJob, importFile, tempDir,
        writeSpikeSeries} from './harness.mjs';

const args = parseArgs(process.argv);
const CHROMIUM = process.env.TW_CHROMIUM || '/usr/bin/chromium';
// playwright-core wants Node 20 or later (web/package.json pins it).
if (Number(process.versions.node.split('.')[0]) < 20) {
  skip(`node ${process.versions.node} is older than playwright-core needs (20 or later)`);
}
if (!fs.existsSync(CHROMIUM)) skip(`${CHROMIUM} is not installed (Debian: apt-get install chromium)`);
const webDir = path.resolve(args.source, 'web');
const require = createRequire(path.join(webDir, 'package.json'));
let chromium;
let axeSource;
try {
  ({chromium} = require('playwright-core'));
  axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
} catch (e) {
  console.error(`playwright-core or axe-core is missing in ${webDir}/node_modules: build the ` +
                `trainwatch target (it runs npm ci there) or run npm ci in web/ (${e.message})`);
  process.exit(1);
}

const failures = [];
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
}

const BIG = 'big-1m';
const SPIKE_METRIC = 'spike:loss';
const N = 1000000;
const SPIKE_AT = 654321;
const SPIKE = 50;
const TENSOR_JOB = 'tensors-1';
const HOSTS_JOB = 'ddp-hosts';
// A job whose log is several pages long (the log panel reads 500 lines a page).
const LONG_LOG_JOB = 'long-log';
const LONG_LOG_LINES = 1800;
const TENSOR_NAMES = ['0.weight', '2.weight', '10.weight'];
// 20 steps of two statistics of three gradients; 10.weight's abs_mean falls
// a thousandfold (a vanishing gradient), the others' slowly.
// It prints nothing: the log panel of such a job shows an empty stream
// (and no 404 reaches the console).
const tensorScript = (steps, delay) => `
import time, trainwatch
run = trainwatch.Run()
for step in range(${steps}):
    t, points = run.stamp(step)
    for i, name in enumerate(${JSON.stringify(TENSOR_NAMES)}):
        fall = 0.7 if name == "10.weight" else 0.98
        for stat, v in (("abs_mean", 0.1 * fall ** step), ("l2", 1.0 + i + step / 10)):
            key = run.series_key("trainwatch/Tensors", stat, {"Tensor": name, "Collection": "gradients"})
            points.append((key, t, v))
    run.put_points(points)
    ${delay > 0.1 ? 'run.flush()' : 'pass'}
    time.sleep(${delay})
run.close()
`;
const data = tempDir('tw-browser-');
const server = new Server(args.trainwatch, data, await freePort());
const shots = args.artifacts;
fs.mkdirSync(shots, {recursive: true});
let browser;

async function main() {
  // 1,000,000 samples starting a minute from now (the job that owns them is
  // created first, so they lie within its span), imported before the server
  // takes the folder.
  const t0 = Date.now() + 60000;
  const file = path.join(data, 'spike.vmimport');
  writeSpikeSeries(file, {job: BIG, metric: SPIKE_METRIC, t0, n: N, at: SPIKE_AT, spike: SPIKE});
  importFile(args.trainwatch, data, file);
  fs.rmSync(file);
  await server.start();

  const py = (jobArgs) => ['python3', path.join(args.source, 'examples/train.py'), ...jobArgs];
  const defs = ['--definitions', path.join(args.source, 'examples/definitions.json'),
                '--metric', 'epoch=Train Epoch: (\\d+) ', '--step-metric', 'epoch',
                '--profile-interval', '200ms'];
  const big = runJob(args.trainwatch, server, BIG, ['--no-rules'], ['python3', '-c', 'print("1M imported samples")']);
  // Tensor statistics as the PyTorch hook sends them, through the Python
  // client the runner puts on the job's PYTHONPATH (no torch needed).
  const tensors = runJob(args.trainwatch, server, TENSOR_JOB, ['--no-rules', '--profile-interval', 'off'],
                         ['python3', '-c', tensorScript(20, 0.02)]);
  const seeds = [1, 2].map((seed) => runJob(args.trainwatch, server, `seed-${seed}`, defs,
                                              py(['--epochs', '3', '--seed', String(seed)])));
  // A job on three hosts, the third three times slower: the hosts panel and
  // the Straggler rule's finding.
  const hostJob = (n, pause, count, job = HOSTS_JOB) => runJob(args.trainwatch, server, job,
    ['--host', String(n), '--profile-interval', 'off', '--metric', 'step=step (\\d+)',
     '--rule', 'Straggler:window=5'],
    ['/bin/sh', '-c', `i=0; while [ $i -lt ${count} ]; do echo "step $i"; i=$((i+1)); sleep ${pause}; done`]);
  const hosts = [hostJob(1, '0.1', 80), hostJob(2, '0.1', 80), hostJob(3, '0.3', 27)];
  const longLog = runJob(args.trainwatch, server, LONG_LOG_JOB, ['--no-rules', '--profile-interval', 'off'],
                         ['python3', '-c', `for i in range(${LONG_LOG_LINES}): print(f"line {i}")`]);
  for (const j of [big, tensors, ...seeds, ...hosts, longLog]) {
    const r = await j.done;
    if (r.code !== 0) throw new Error(`a job failed (${r.code}): ${r.out}`);
  }

  browser = await chromium.launch({executablePath: CHROMIUM, headless: true, args: ['--no-sandbox']});
  const live = await hasLive();
  liveAvailable = live;
  if (!live) console.log('NOTICE: the server has no /api/v1/live yet: the dashboard polls; reconnect not tested');

  // The live job: runs while the pages watch it.
  const demo = runJob(args.trainwatch, server, 'demo-live', defs, py(['--epochs', '6', '--step-delay', '0.03']));
  await checkLiveJob(demo, live);
  const r = await demo.done;
  if (r.code !== 0) throw new Error(`demo-live failed (${r.code}): ${r.out}`);
  if (live) await checkResume(defs, py);
  if (live) await checkTensorsLive();
  if (live) await checkLateHost(hostJob);

  for (const theme of ['light', 'dark']) {
    await checkReport('seed-1', theme);
    const page = await newPage(theme);
    await checkJobs(page, theme);
    await checkSpike(page, theme);
    await checkPointLog(page, theme);
    await checkMath(page, theme);
    await checkLazy(page, theme);
    await checkCompare(page, theme);
    await checkTensors(page, theme);
    await checkHosts(page, theme);
    await checkLongLog(page, theme);
    await page.context().close();
  }
}

// A log longer than many pages opens at its last line, and "Earlier lines"
// reads back a page at a time to its first.
async function checkLongLog(page, theme) {
  await open(page, `/job/${LONG_LOG_JOB}`);
  const shown = () => page.$$eval('#log-lines li .msg', (l) => l.map((x) => x.textContent));
  await page.waitForSelector('#log-lines li');
  let msgs = await shown();
  check(msgs.length === 500 && msgs[0] === `line ${LONG_LOG_LINES - 500}` && msgs.at(-1) === `line ${LONG_LOG_LINES - 1}`,
        `a log of ${LONG_LOG_LINES} lines opens at its last 500 (${msgs[0]} .. ${msgs.at(-1)}, ${msgs.length}, ${theme})`);
  await page.locator('#log-lines').screenshot({path: path.join(shots, `log-long-${theme}.png`)});
  for (let pages = 2; pages <= Math.ceil(LONG_LOG_LINES / 500); pages++) {
    await page.click('#log-earlier');
    const want = Math.min(LONG_LOG_LINES, pages * 500);
    await page.waitForFunction((n) => document.querySelectorAll('#log-lines li').length === n, want);
  }
  msgs = await shown();
  const inOrder = msgs.every((m, i) => m === `line ${i}`);
  check(msgs.length === LONG_LOG_LINES && inOrder,
        `"Earlier lines" reads back to the first line, each line once and in order (${msgs.length}, ${inOrder}, ${theme})`);
  await page.click('#log-earlier');
  await page.waitForFunction(() => document.querySelector('.log-status').textContent.startsWith('no earlier lines'));
  check(true, 'and then says there are no earlier lines');
}

// The job's report (trainwatch report, GET /api/v1/jobs/NAME/report): saved
// as a file and opened with the network off, as a user opens a report they
// were sent. Everything must be in the file.
async function checkReport(job, theme) {
  const res = await fetch(`${server.base}/api/v1/jobs/${job}/report`);
  check(res.ok, `the report of ${job} is served (${res.status})`);
  const file = path.join(shots, `report-${job}.html`);
  fs.writeFileSync(file, await res.text());
  const context = await browser.newContext({colorScheme: theme, viewport: {width: 1100, height: 900},
                                            offline: true});
  const requests = [];
  await context.route(() => true, (route) => {
    const url = route.request().url();
    if (!url.startsWith('file://')) requests.push(url);
    return url.startsWith('file://') ? route.continue() : route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`file://${file}`);
  const seen = await page.evaluate(() => ({
    sections: [...document.querySelectorAll('h2[id]')].map((h) => h.id),
    charts: document.querySelectorAll('svg.chart').length,
    drawn: [...document.querySelectorAll('svg.chart path')].filter((p) => (p.getAttribute('d') || '').length > 10).length,
    title: document.querySelector('h1')?.textContent || '',
  }));
  for (const id of ['summary', 'rules', 'metrics', 'system', 'steps', 'efficiency', 'timeline']) {
    check(seen.sections.includes(id), `the report has its ${id} section (${seen.sections})`);
  }
  check(seen.title.includes(job), `the report is ${job}'s (${seen.title})`);
  check(seen.charts >= 3 && seen.drawn >= 3, `the report's charts are drawn offline (${seen.charts} charts, ${seen.drawn} lines)`);
  check(requests.length === 0, `the report asks for nothing (${requests.join(', ')})`);
  check(errors.length === 0, `the report has no script errors (${errors.join('; ')})`);
  await page.screenshot({path: path.join(shots, `report-${theme}.png`), fullPage: true});
  await context.close();
}

const consoleErrors = [];
let liveAvailable = true;
// While a test sends a request the server refuses on purpose, the browser's
// own "Failed to load resource" line for it is expected.
let expectRefused = '';
async function newPage(theme) {
  const context = await browser.newContext({colorScheme: theme, viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // Before the live stream exists on this server, its 404 is expected (the pages poll instead).
    if (!liveAvailable && (m.location().url || '').includes('/api/v1/live')) return;
    if (expectRefused && (m.location().url || '').includes(expectRefused)) return;
    consoleErrors.push(`${theme} ${page.url()}: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${theme} ${page.url()}: ${e.message}`));
  // Nothing but the server itself: the dashboard works offline.
  await context.route((url) => !url.href.startsWith(server.base), (route) => {
    consoleErrors.push(`request outside the server: ${route.request().url()}`);
    return route.abort();
  });
  return page;
}

async function open(page, hash) {
  await page.goto(`${server.base}/#${hash}`);
  await page.waitForFunction(() => document.getElementById('main').getAttribute('aria-busy') === 'false');
}

async function axe(page, what) {
  await page.addScriptTag({content: axeSource});
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, {resultTypes: ['violations']});
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  check(result.length === 0, `axe: no serious or critical violation on ${what}${result.length ? `: ${result.join('; ')}` : ''}`);
}

async function shot(page, name, theme) {
  await page.screenshot({path: path.join(shots, `${name}-${theme}.png`), fullPage: true});
}

async function hasLive() {
  const ctl = new AbortController();
  try {
    const r = await fetch(`${server.base}/api/v1/live`, {signal: ctl.signal});
    const ok = r.ok && (r.headers.get('content-type') || '').startsWith('text/event-stream');
    ctl.abort();
    return ok;
  } catch {
    return false;
  }
}

// Scrolls the chart of `metric` into view: the job page builds a chart and
// asks for its data only when it comes near the viewport.
async function showChart(page, metric) {
  const sel = `figure.chart[data-metric="${metric}"]`;
  await page.waitForSelector(sel);
  await page.$eval(sel, (f) => f.scrollIntoView({block: 'center'}));
}

// The chart of `metric` on the job page: what it draws.
function chartState(page, metric) {
  return page.evaluate((m) => {
    const box = document.querySelector(`figure.chart[data-metric="${CSS.escape(m)}"]`);
    if (!box) return null;
    const u = window.__tw.charts[box.id];
    return {id: box.id, points: Number(box.dataset.points || 0), raw: box.dataset.raw === 'true',
            focus: box.dataset.focus || '', xs: Array.from(u.data[0]), ys: Array.from(u.data[1]),
            yMax: u.scales.y.max, xMin: u.scales.x.min, xMax: u.scales.x.max};
  }, metric);
}

async function checkJobs(page, theme) {
  await open(page, '/jobs');
  await page.waitForSelector(`tr[data-job="${BIG}"]`);
  const rows = await page.$$eval('tbody tr', (trs) => trs.map((tr) => tr.dataset.job));
  check(['seed-1', 'seed-2', 'demo-live', BIG].every((j) => rows.includes(j)), `jobs page lists every job (${theme})`);
  await page.waitForFunction(() => Number(document.querySelector('tr[data-job="seed-1"] canvas.spark')?.dataset.points) > 0);
  check(true, `jobs page draws seed-1's sparkline (${theme})`);
  const status = await page.textContent('tr[data-job="seed-1"] .status');
  check(status === 'Completed', `seed-1 shows Completed (${status})`);
  // Search and sort are in the URL and restore.
  await page.fill('#job-search', 'seed');
  await page.waitForFunction(() => location.hash.includes('q=seed'));
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
  check((await page.inputValue('#job-search')) === 'seed', `the jobs search restores from the URL (${theme})`);
  await page.click('th button.sort >> text=Job');
  const names = await page.$$eval('tbody tr', (trs) => trs.map((tr) => tr.dataset.job));
  check(names.join() === 'seed-2,seed-1', `sorting by name, descending (${names})`);
  await open(page, '/jobs');
  await page.waitForSelector(`tr[data-job="${BIG}"]`);
  await shot(page, 'jobs', theme);
  await axe(page, `the jobs page (${theme})`);
}

async function checkSpike(page, theme) {
  await open(page, `/job/${BIG}`);
  await page.waitForFunction((m) => Number(document.querySelector(`figure.chart[data-metric="${m}"]`)?.dataset.points) > 0,
                             SPIKE_METRIC, {timeout: 120000});
  const s = await chartState(page, SPIKE_METRIC);
  const xChoice = await page.$eval('#x-kind', (e) => e.value);
  check(xChoice === 'time', `a job without step samples opens by wall time (x-axis "${xChoice}")`);
  check(s.points < 4 * 4000 && !s.raw, `1M samples arrive aggregated (${s.points} points)`);
  check(Math.max(...s.ys) === SPIKE, `the spike is among the drawn points at full zoom-out (max ${Math.max(...s.ys)})`);
  check(s.yMax >= SPIKE, `the y scale reaches the spike (max ${s.yMax})`);
  // The drawn path: the topmost coloured pixel of the plot is the spike's.
  const pixel = await page.evaluate((id) => {
    const u = window.__tw.charts[id];
    const {left, top, width, height} = u.bbox;
    const img = u.ctx.getImageData(left, top, width, height).data;
    const spikeY = u.valToPos(Math.max(...u.data[1]), 'y', true) - top;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const k = (y * width + x) * 4;
        // a saturated (series) pixel, not grid grey
        const [r, g, b, a] = [img[k], img[k + 1], img[k + 2], img[k + 3]];
        if (a > 100 && Math.max(r, g, b) - Math.min(r, g, b) > 80) return {y, spikeY};
      }
    }
    return {y: -1, spikeY};
  }, s.id);
  check(pixel.y >= 0 && Math.abs(pixel.y - pixel.spikeY) <= 3,
        `the drawn line's highest pixel is the spike's (row ${pixel.y}, spike at ${pixel.spikeY.toFixed(1)})`);
  await shot(page, 'job-1m', theme);
  await axe(page, `the job page with 1M samples (${theme})`);

  // Zoom by dragging around the spike until the chart holds raw samples.
  for (let i = 0; i < 4; i++) {
    const st = await chartState(page, SPIKE_METRIC);
    if (st.raw) break;
    const box = await page.evaluate(({id, spikeX}) => {
      document.getElementById(id).scrollIntoView({block: 'center'});
      const u = window.__tw.charts[id];
      const r = u.over.getBoundingClientRect();
      return {x: r.left + u.valToPos(spikeX, 'x'), y: r.top + r.height / 2};
    }, {id: st.id, spikeX: st.xs[st.ys.indexOf(SPIKE)]});
    await page.mouse.move(box.x - 6, box.y);
    await page.mouse.down();
    await page.mouse.move(box.x, box.y, {steps: 3});
    await page.mouse.move(box.x + 6, box.y, {steps: 3});
    await page.mouse.up();
    await page.waitForFunction((p) => document.querySelector('figure.chart[data-metric="spike:loss"]').dataset.points !== p ||
                                      location.hash.includes('from='), String(st.points));
    await page.waitForFunction((id) => !document.getElementById(id).dataset.pending, st.id);
    await sleep(500);
  }
  const z = await chartState(page, SPIKE_METRIC);
  const steps = z.xs.slice(1).map((x, i) => x - z.xs[i]);
  check(z.raw && z.ys.includes(SPIKE) && steps.every((d) => d === 1),
        `zooming in fetches raw samples, one per millisecond, spike included (${z.points} points, raw ${z.raw})`);
  const hash = await page.evaluate(() => location.hash);
  check(/from=/.test(hash) && /to=/.test(hash), `the zoom is in the URL (${hash})`);
  await page.reload();
  await page.waitForFunction(() => document.querySelector('figure.chart[data-metric="spike:loss"]')?.dataset.raw === 'true');
  check(true, `the zoomed view restores from its URL (${theme})`);
  await shot(page, 'job-1m-zoomed', theme);
}

// Metric math over a job's metrics: the chart draws what CloudWatch's
// GetMetricData computes, checked against GetMetricStatistics' averages.
async function checkMath(page, theme) {
  await open(page, `/job/${BIG}?x=time`);
  const ids = await page.textContent('#math-ids');
  check(ids.includes('spike_loss (spike:loss)'), `the metrics' Ids for math are listed (${ids})`);
  await page.fill('#math-expr', 'spike_loss * 2');
  await page.click('#math-form button[type="submit"]');
  const drawn = () => document.querySelector('figure.chart[data-metric="math"]')?.dataset.state === 'drawn';
  await page.waitForFunction(drawn, null, {timeout: 60000});
  const m = await chartState(page, 'math');
  const period = await page.$eval('figure.chart[data-metric="math"]', (f) => Number(f.dataset.period));
  const t0 = m.xs[0];
  const t1 = m.xs[m.xs.length - 1] + period * 1000;
  const stats = await (await fetch(`${server.base}/api/v1/metrics/statistics?namespace=%2Faws%2Fsagemaker%2FTrainingJobs` +
    `&metric=spike%3Aloss&dimension=TrainingJobName%3D${BIG}&period=${period}s&stat=Average` +
    `&start=${new Date(t0).toISOString()}&end=${new Date(t1).toISOString()}`)).json();
  const want = new Map(stats.datapoints.map((d) => [d.t_ms, 2 * d.values.Average]));
  const same = m.xs.length > 3 && m.xs.length === want.size &&
    m.xs.every((x, i) => Math.abs(want.get(x) - m.ys[i]) <= 1e-9 * Math.abs(m.ys[i]));
  check(same, `the expression's chart is twice the loss's averages, period by period (${m.xs.length} points, ${period} s)`);
  check(/expr=spike_loss/.test(await page.evaluate(() => location.hash)), 'the expression is in the URL');
  await page.reload();
  await page.waitForFunction(drawn, null, {timeout: 60000});
  check((await page.inputValue('#math-expr')) === 'spike_loss * 2', `the expression restores from the URL (${theme})`);
  await page.$eval('figure.chart[data-metric="math"]', (f) => f.scrollIntoView({block: 'center'}));
  await shot(page, 'job-math', theme);
  await axe(page, `the job page with a metric math chart (${theme})`);
  expectRefused = '/api/v1/metrics/data';
  await page.fill('#math-expr', 'LOG(spike_loss)');
  await page.click('#math-form button[type="submit"]');
  await page.waitForFunction(() => document.getElementById('math-error').textContent.length > 0);
  const error = await page.textContent('#math-error');
  await sleep(200);
  expectRefused = '';
  check(/LOG/.test(error), `an expression CloudWatch refuses says why (${error})`);
  // An expression of several series draws each, labelled by its metric.
  await open(page, '/job/seed-1?x=time');
  await page.fill('#math-expr', 'METRICS() * 2');
  await page.click('#math-form button[type="submit"]');
  await page.waitForFunction(drawn, null, {timeout: 60000});
  const several = await page.evaluate(() => {
    const box = document.querySelector('figure.chart[data-metric="math"]');
    const u = window.__tw.charts[box.id];
    return {lines: Number(box.dataset.lines), series: u.series.slice(1).map((x) => x.label),
            drawn: u.data.slice(1).map((ys) => ys.filter((v) => v !== null).length)};
  });
  const metrics = (await server.get('/api/v1/jobs/seed-1/series')).series
    .filter((x) => x.group === 'algorithm').map((x) => x.metric);
  check(several.lines > 1 && several.series.length === several.lines &&
        several.drawn.every((n) => n > 0) && several.series.every((l) => metrics.includes(l)),
        `METRICS() * 2 draws one line per metric, each labelled by it (${several.series} of ${metrics}; points ${several.drawn})`);
  await page.$eval('figure.chart[data-metric="math"]', (f) => f.scrollIntoView({block: 'center'}));
  await shot(page, 'job-math-several', theme);
}

async function checkPointLog(page, theme) {
  await open(page, '/job/seed-1?x=time');
  // The rules table counts issues as the report does: a rule that had no data
  // to check is marked so, and its warning is not an issue.
  const table = await page.evaluate(() => ({
    head: [...document.querySelectorAll('#rules-body thead th')].map((t) => t.textContent),
    noData: [...document.querySelectorAll('#rules-body td.rule-status')]
      .filter((td) => td.textContent.includes('no data')).length,
  }));
  const statuses = (await server.get('/api/v1/jobs/seed-1')).rule_statuses || [];
  const unchecked = statuses.filter((r) => r.status === 'NoIssuesFound' &&
    (r.findings || []).some((f) => f.severity === 'warning' && f.reason === 'no_data')).length;
  check(table.head[2] === 'Issues' && unchecked > 0 && table.noData === unchecked,
        `the rules table marks the ${unchecked} rules without data to check (${JSON.stringify(table)}, ${theme})`);
  await showChart(page, 'train:loss');
  await page.waitForFunction(() => Number(document.querySelector('figure.chart[data-metric="train:loss"]')?.dataset.points) > 5);
  await page.waitForSelector('#log-lines li');
  const systemCharts = await page.$$eval('#h-system ~ .grid figure.chart', (f) => f.length);
  check(systemCharts > 0, `the system panel has charts (${systemCharts})`);
  // Click a point: the log lines around its moment open, the nearest marked.
  const st = await chartState(page, 'train:loss');
  const i = Math.floor(st.xs.length / 2);
  const target = await page.evaluate(({id, x}) => {
    document.getElementById(id).scrollIntoView({block: 'center'});
    const u = window.__tw.charts[id];
    const r = u.over.getBoundingClientRect();
    return {x: r.left + u.valToPos(x, 'x'), y: r.top + 10};
  }, {id: st.id, x: st.xs[i]});
  await page.mouse.move(target.x, target.y);
  await page.mouse.click(target.x, target.y);
  await page.waitForSelector('#log-lines li.hl');
  const hl = await page.$eval('#log-lines li.hl', (li) => ({t: Number(li.dataset.t), text: li.textContent}));
  // The marked line is the one nearest the point's time (another line printed in
  // the same millisecond may be the one marked); the point's own line is shown.
  const own = `Loss: ${st.ys[i].toFixed(6)}`;
  const shownOwn = await page.$$eval('#log-lines li', (lis, o) => lis.some((li) => li.textContent.includes(o)), own);
  check(Math.abs(hl.t - st.xs[i]) < 1000 && shownOwn,
        `clicking a loss point marks its moment's log line (${hl.text.slice(0, 60)}, ${hl.t - st.xs[i]} ms away; "${own}" shown)`);
  check((await page.evaluate(() => location.hash)).includes('at='), 'the picked moment is in the URL');
  // A log line links back to its point.
  const line = await page.$('#log-lines li:nth-child(3) button.to-chart');
  const lineT = Number(await line.evaluate((b) => b.parentElement.dataset.t));
  await line.click();
  await page.waitForFunction((t) => document.querySelector('figure.chart[data-metric="train:loss"]').dataset.focus === String(t), lineT);
  check(true, `a log line's link marks its moment on the charts (${theme})`);
  // Log search.
  await page.fill('#log-search', 'Test set');
  await page.waitForFunction(() => [...document.querySelectorAll('#log-lines li')].every((li) => li.textContent.includes('Test set')));
  const n = await page.$$eval('#log-lines li', (l) => l.length);
  check(n === 3, `log search keeps the 3 "Test set" lines (${n})`);
  await page.fill('#log-search', '');
  await shot(page, 'job', theme);
  await axe(page, `the job page (${theme})`);
  // Leaving the page (in the app, no reload) destroys its charts: uPlot
  // keeps every plot it has not destroyed working on each scroll and resize.
  check(await page.evaluate(() => Object.keys(window.__tw.charts).length) > 0, 'the job page has charts');
  await page.evaluate(() => { location.hash = '#/jobs'; });
  await page.waitForSelector('tr[data-job="seed-1"]');
  const left = await page.evaluate(() => Object.keys(window.__tw.charts).length);
  check(left === 0, `the job page's charts are destroyed when it is left (${left} left)`);
  const relative = await page.evaluate(async () => {
    const {fmtRelative} = await import('/ui/charts.js');
    return [59.5, 119.7, 3599.6].map(fmtRelative);
  });
  check(relative.join(' ') === '59.5s 2m00 1h00', `relative times round whole seconds first (${relative.join(' ')})`);
  // A live stream the browser gave up on (an answer other than 200 while the
  // server restarts) is opened anew, and the page told to refetch; one that
  // never opened is left to the page's polling. EventSource stood in for.
  const revived = await page.evaluate(async () => {
    const made = [];
    class FakeSource extends EventTarget {
      constructor(url) { super(); this.url = url; this.readyState = 0; made.push(this); }
      close() { this.readyState = 2; }
      emit(type, state) { this.readyState = state; this.dispatchEvent(new Event(type)); }
    }
    FakeSource.CONNECTING = 0; FakeSource.OPEN = 1; FakeSource.CLOSED = 2;
    const real = window.EventSource;
    const realFetch = window.fetch;
    window.EventSource = FakeSource;
    const until = async (f) => { for (let i = 0; i < 250 && !f(); i++) await new Promise((r) => setTimeout(r, 20)); };
    try {
      const {live} = await import('/ui/api.js');
      const seen = [];
      const stream = live(['j'], {open: () => seen.push('open'), reset: (d) => seen.push(`reset:${d.reason}`),
                                  error: (st) => seen.push(`error:${st}`)});
      made[0].emit('open', 1);
      await until(() => seen.includes('open'));  // once the server's health says it streams
      made[0].emit('error', 2);  // gave up
      await new Promise((r) => setTimeout(r, 1300));
      const after = made.length;
      if (after === 2) made[1].emit('open', 1);
      await until(() => seen.includes('reset:reconnected'));
      stream.close();
      const never = live([], {error: (st) => seen.push(`never:${st}`)});
      made[made.length - 1].emit('error', 2);
      await new Promise((r) => setTimeout(r, 1300));
      never.close();
      // A server that only follows a folder another process writes: no stream, polling.
      window.fetch = async () => new Response(JSON.stringify({status: 'ok', live_updates: false}),
                                              {headers: {'Content-Type': 'application/json'}});
      const follower = live([], {open: () => seen.push('follower-open'),
                                  error: (st) => seen.push(`follower:${st}`)});
      made[made.length - 1].emit('open', 1);  // a follower's stream opens (it sends pings)
      await until(() => seen.some((x) => x.startsWith('follower')));
      const followerClosed = made[made.length - 1].readyState === 2;
      follower.close();
      return {after, total: made.length, followerClosed, seen: seen.join(' ')};
    } finally {
      window.EventSource = real;
      window.fetch = realFetch;
    }
  });
  check(revived.after === 2 && revived.total === 4 && revived.followerClosed &&
        revived.seen === 'open error:0 open reset:reconnected never:2 follower:2',
        `a live stream that gave up is opened again and the page refetches (${JSON.stringify(revived)})`);
  // A job with a step metric opens by step (no x= in the URL), here with
  // smoothing and log scale.
  await open(page, '/job/seed-1?ema=0.9&log=1');
  await showChart(page, 'train:loss');
  await page.waitForFunction(() => Number(document.querySelector('figure.chart[data-metric="train:loss"]')?.dataset.points) > 0);
  const byStep = await chartState(page, 'train:loss');
  const xChoice = await page.$eval('#x-kind', (s) => s.value);
  check(xChoice === 'step' && byStep.xs.every((x) => Number.isInteger(x) && x >= 1 && x <= 3),
        `a job with a step metric opens by step: x is the epoch (x-axis "${xChoice}", ${[...new Set(byStep.xs)]})`);
  await shot(page, 'job-step-ema-log', theme);
}

// Charts far below the fold are empty frames of their size until scrolled to:
// no uPlot, no chart request; then they fetch and draw (with the moment of the
// URL's at= marked, as the charts drawn first have it).
async function checkLazy(page, theme) {
  const sys = (await server.get('/api/v1/jobs/seed-1/series')).series.filter((s) => s.group === 'system');
  const at = Math.max(...sys.map((s) => s.last_ms || 0));
  const asked = [];
  const onRequest = (r) => {
    if (r.url().includes('/api/v1/chart?')) asked.push(new URL(r.url()).searchParams.get('metric'));
  };
  page.on('request', onRequest);
  await open(page, `/job/seed-1?x=time&at=${at}`);
  const far = await page.evaluate(() => {
    const figs = [...document.querySelectorAll('figure.chart')];
    const f = figs[figs.length - 1];
    const r = f.getBoundingClientRect();
    return {id: f.id, metric: f.dataset.metric, top: r.top, height: r.height, screen: innerHeight,
            state: f.dataset.state, points: f.dataset.points || '', built: Boolean(window.__tw.charts[f.id]),
            figures: figs.length, drawn: figs.filter((x) => x.dataset.points).length};
  });
  check(far.top > 2 * far.screen, `seed-1's last chart lies more than a screen below the fold (top ${Math.round(far.top)} px)`);
  check(far.state === 'waiting' && !far.points && !far.built && !asked.includes(far.metric),
        `a chart far below the fold is not built or fetched (${far.metric}: ${far.state}; ` +
        `${far.drawn} of ${far.figures} charts drawn, ${asked.length} chart requests)`);
  check(far.drawn < far.figures, `the page draws only the charts near the viewport (${far.drawn} of ${far.figures}, ${theme})`);
  await page.$eval(`#${far.id}`, (f) => f.scrollIntoView({block: 'center'}));
  await page.waitForFunction((id) => Number(document.getElementById(id).dataset.points) > 0, far.id);
  const now = await page.evaluate((id) => {
    const f = document.getElementById(id);
    const u = window.__tw.charts[id];
    const {left, top, width, height} = u.bbox;
    const img = u.ctx.getImageData(left, top, width, height).data;
    let coloured = 0;
    for (let k = 0; k < img.length; k += 4) {
      if (img[k + 3] > 100 && Math.max(img[k], img[k + 1], img[k + 2]) - Math.min(img[k], img[k + 1], img[k + 2]) > 80) coloured++;
    }
    return {height: f.getBoundingClientRect().height, coloured, focus: f.dataset.focus || '', state: f.dataset.state};
  }, far.id);
  check(asked.includes(far.metric) && now.state === 'drawn' && now.coloured > 20,
        `scrolled into view, it fetches and draws (${far.metric}: ${now.coloured} line pixels)`);
  check(Math.abs(now.height - far.height) <= 40,
        `its frame had about its size (${Math.round(far.height)} px before, ${Math.round(now.height)} px drawn)`);
  check(now.focus !== '', `the URL's moment is marked on it too (focus ${now.focus})`);
  page.off('request', onRequest);
  await shot(page, 'job-scrolled', theme);
}

// The tensor panel of a job the hook watched: one chart of the URL's
// collection and statistic, a line per tensor, by step; the statistic picker
// redraws it and keeps the choice in the URL.
async function checkTensors(page, theme) {
  await open(page, `/job/${TENSOR_JOB}`);
  await page.waitForSelector('#tensor-panel');
  await page.$eval('#tensor-panel', (p) => p.scrollIntoView({block: 'center'}));
  const drawn = (metric) => page.waitForFunction((m) => {
    const box = document.querySelector(`figure.chart[data-metric="${m}"]`);
    return box && Number(box.dataset.points) > 0;
  }, metric);
  await drawn('tensors:gradients:abs_mean');
  const first = await page.evaluate(() => {
    const box = document.querySelector('figure.chart[data-metric="tensors:gradients:abs_mean"]');
    const u = window.__tw.charts[box.id];
    return {collection: document.getElementById('tensor-collection').value,
            stat: document.getElementById('tensor-stat').value,
            labels: u.series.slice(1).map((s) => s.label), xs: Array.from(u.data[0]),
            last: u.data.slice(1).map((ys) => ys[ys.length - 1])};
  });
  check(first.collection === 'gradients' && first.stat === 'abs_mean',
        `the tensor panel opens on the gradients' abs_mean (${first.collection} · ${first.stat}, ${theme})`);
  check(JSON.stringify(first.labels) === JSON.stringify(['0.weight', '2.weight', '10.weight']),
        `a line per tensor, in name order (${first.labels.join(', ')})`);
  check(first.xs.length === 20 && first.xs[0] === 0 && first.xs[19] === 19,
        `by step, 0 to 19 (${first.xs.length} steps: ${first.xs[0]} .. ${first.xs[first.xs.length - 1]})`);
  const vanishing = first.last[2];
  check(Math.abs(vanishing - 0.1 * 0.7 ** 19) < 1e-9 && first.last[0] > 100 * vanishing,
        `the vanishing gradient stands out at the last step (${vanishing.toExponential(3)} vs ${first.last[0].toFixed(4)})`);
  await page.selectOption('#tensor-stat', 'l2');
  await drawn('tensors:gradients:l2');
  const url = new URL(page.url().replace('#', ''));
  check(url.searchParams.get('ts') === 'l2' && url.searchParams.get('tc') === 'gradients',
        `the chosen statistic is in the URL (${page.url().split('#')[1]})`);
  await axe(page, `the tensor panel (${theme})`);
  await shot(page, 'job-tensors', theme);
  // Opened from that URL, the panel shows that choice.
  await open(page, `/job/${TENSOR_JOB}?tc=gradients&ts=l2`);
  await page.$eval('#tensor-panel', (p) => p.scrollIntoView({block: 'center'}));
  await drawn('tensors:gradients:l2');
  check(await page.$eval('#tensor-stat', (s) => s.value) === 'l2', `a URL with ts=l2 opens on l2 (${theme})`);
}

// A job whose second host registers while its page is open: the page gains
// its hosts panel without a reload.
async function checkLateHost(hostJob) {
  const first = hostJob(1, '0.2', 60, 'late-hosts');
  for (let i = 0; i < 100 && !(await fetch(`${server.base}/api/v1/jobs/late-hosts`)).ok; ++i) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const page = await newPage('light');
  await open(page, '/job/late-hosts');
  check(await page.$('#hosts-panel') === null, 'a job on one host has no hosts panel');
  const second = hostJob(2, '0.1', 20, 'late-hosts');
  await page.waitForSelector('#hosts-table tbody tr[data-host="algo-2"]', {timeout: 30000});
  check(true, 'the hosts panel appears once a second host registers, without a reload');
  await page.waitForFunction(() => document.getElementById('main').getAttribute('aria-busy') === 'false');
  await shot(page, 'job-late-host', 'light');
  await page.context().close();
  for (const j of [first, second]) {
    const r = await j.done;
    if (r.code !== 0) throw new Error(`late-hosts failed (${r.code}): ${r.out}`);
  }
}

// A job on several hosts: the hosts panel compares their pace, marks the one
// the Straggler rule found, and draws each host's steps on one chart.
async function checkHosts(page, theme) {
  await open(page, `/job/${HOSTS_JOB}`);
  await page.waitForSelector('#hosts-table tbody tr');
  const rows = await page.$$eval('#hosts-table tbody tr', (trs) => trs.map((tr) => ({
    host: tr.dataset.host, straggler: tr.classList.contains('straggler'),
    pace: Number(tr.children[3].textContent)})));
  check(rows.map((r) => r.host).join(',') === 'algo-1,algo-2,algo-3',
        `the hosts panel has a row per host (${rows.map((r) => r.host).join(', ')}, ${theme})`);
  check(rows.map((r) => r.straggler).join(',') === 'false,false,true',
        `the slow host is marked lagging, the others not (${JSON.stringify(rows)})`);
  check(rows[2].pace > 0 && rows[2].pace < rows[0].pace / 2,
        `its pace is under half the others' (${rows[2].pace} vs ${rows[0].pace} steps/s)`);
  await page.$eval('#hosts-panel', (p) => p.scrollIntoView({block: 'start'}));
  await page.waitForFunction(() => {
    const box = document.querySelector('#hosts-panel figure.chart[data-metric="HostStep"]');
    return box && Number(box.dataset.points) > 0;
  });
  const labels = await page.evaluate(() => {
    const box = document.querySelector('#hosts-panel figure.chart[data-metric="HostStep"]');
    return window.__tw.charts[box.id].series.slice(1).map((x) => x.label);
  });
  check(labels.join(',') === 'algo-1,algo-2,algo-3', `"Steps by host" draws a line per host (${labels.join(', ')})`);
  await axe(page, `the hosts panel (${theme})`);
  await shot(page, 'job-hosts', theme);
}

// The tensor panel of a running job: it appears with the job's first
// tensors and follows the steps as they come, without a reload.
async function checkTensorsLive() {
  const job = runJob(args.trainwatch, server, 'tensors-live', ['--no-rules', '--profile-interval', 'off'],
                     ['python3', '-c', tensorScript(60, 0.25)]);
  await waitFor('tensors-live to be recorded', async () => (await fetch(`${server.base}/api/v1/jobs/tensors-live`)).ok);
  const page = await newPage('light');
  await open(page, '/job/tensors-live');
  await page.waitForSelector('#tensor-panel', {timeout: 30000});
  await page.$eval('#tensor-panel', (p) => p.scrollIntoView({block: 'center'}));
  const lastStep = () => page.evaluate(() => {
    const box = document.querySelector('figure.chart[data-metric="tensors:gradients:abs_mean"]');
    if (!box || !window.__tw.charts[box.id]) return -1;
    const xs = window.__tw.charts[box.id].data[0];
    return xs.length ? xs[xs.length - 1] : -1;
  });
  await waitFor('the tensor chart to be drawn', async () => (await lastStep()) >= 0, 30000);
  const first = await lastStep();
  await waitFor('the tensor chart to follow the job', async () => (await lastStep()) >= first + 8, 30000)
    .catch(() => {});
  const later = await lastStep();
  check(later >= first + 8, `the tensor panel follows a running job without a reload (step ${first}, then ${later})`);
  await page.context().close();
  const r = await job.done;
  if (r.code !== 0) throw new Error(`tensors-live failed (${r.code}): ${r.out}`);
}

async function checkCompare(page, theme) {
  await open(page, '/compare?jobs=seed-1,seed-2&metric=validation:loss&x=step');
  await page.waitForSelector('figure.chart');
  let lines = await page.$eval('figure.chart', (f) => Number(f.dataset.lines));
  check(lines === 2, `compare overlays both jobs (${lines} lines)`);
  const hint = await page.textContent('.page');
  check(hint.includes('differ only by seed'), 'compare says the jobs differ only by seed');
  await shot(page, 'compare', theme);
  await axe(page, `the compare page (${theme})`);
  await page.check('#cmp-band');
  await page.waitForFunction(() => location.hash.includes('band=1'));
  await page.waitForSelector('figure.chart');
  lines = await page.$eval('figure.chart', (f) => Number(f.dataset.lines));
  const band = await page.evaluate(() => {
    const {drawn} = window.__tw.compare;
    return {lo: drawn[0].band.lo, hi: drawn[0].band.hi, mean: drawn[0].ys};
  });
  check(lines === 1 && band.mean.every((m, k) => band.lo[k] <= m && m <= band.hi[k]),
        'with the band, one mean line between the min and the max');
  await shot(page, 'compare-band', theme);
  // ±σ: for two seeds the band is mean ± half their difference.
  await page.selectOption('#cmp-spread', 'sigma');
  await page.waitForFunction(() => location.hash.includes('spread=sigma'));
  await page.waitForFunction(() => window.__tw.compare?.drawn?.[0]?.label?.includes('σ'));
  const sigma = await page.evaluate(() => {
    const {drawn} = window.__tw.compare;
    return {lo: drawn[0].band.lo, hi: drawn[0].band.hi, mean: drawn[0].ys};
  });
  check(sigma.mean.every((m, k) => m === null ||
          Math.abs((sigma.hi[k] - m) - (m - sigma.lo[k])) < 1e-9 &&
          Math.abs((sigma.hi[k] - sigma.lo[k]) - (band.hi[k] - band.lo[k])) < 1e-9),
        'the ±σ band of two seeds is symmetric about the mean and as wide as their spread');
  await shot(page, 'compare-sigma', theme);
}

// While demo-live runs: its job page follows the log and its charts grow.
async function checkLiveJob(demo, live) {
  const page = await newPage('light');
  const rec = await waitFor('demo-live to exist', () => server.get('/api/v1/jobs/demo-live'), 60000);
  // Its first line: before it, the page's read of the log stream is a 404 (the
  // panel says "no lines yet"), which the browser logs as a console error.
  const q = new URLSearchParams({group: '/aws/sagemaker/TrainingJobs', stream: rec.log_stream, limit: '1'});
  await waitFor('demo-live\'s first log line', () => server.get(`/api/v1/logs/events?${q}`), 60000);
  // The jobs page, filtered to running jobs, lists it until it ends.
  const jobsPage = await newPage('light');
  await open(jobsPage, '/jobs?status=InProgress');
  await jobsPage.waitForSelector('tr[data-job="demo-live"]');
  await open(page, '/job/demo-live?x=time');
  await showChart(page, 'train:loss');
  const loss = () => page.evaluate(() => Number(document.querySelector('figure.chart[data-metric="train:loss"]')?.dataset.points || 0));
  const before = await loss();
  const linesBefore = await page.$$eval('#log-lines li', (l) => l.length);
  await waitFor('new log lines on the open page', async () =>
    (await page.$$eval('#log-lines li', (l) => l.length)) > linesBefore + 3, 60000);
  const scrolled = await page.evaluate(() => {
    const l = document.getElementById('log-lines');
    return l.scrollHeight > l.clientHeight && l.scrollHeight - l.scrollTop - l.clientHeight < 30;
  });
  check(scrolled, 'the log follows: scrolled to its newest line');
  await waitFor('new loss points on the open page', async () => (await loss()) > before, 60000);
  check(true, `the loss chart grows while the job runs (${before} -> ${await loss()} points, ${live ? 'live stream' : 'polling'})`);
  await demo.done;
  await page.waitForFunction(() => document.getElementById('job-status-pill').textContent === 'Completed', null, {timeout: 30000});
  check(true, 'the status turns Completed without a reload');
  await jobsPage.waitForSelector('tr[data-job="demo-live"]', {state: 'detached', timeout: 30000});
  check(true, 'the jobs page filtered to InProgress drops the job when it completes');
  await jobsPage.context().close();
  await sleep(1500);
  const shown = await page.$$eval('#log-lines li .msg', (l) => l.map((x) => x.textContent));
  const stored = await allLogLines((await server.get('/api/v1/jobs/demo-live')).log_stream);
  check(shown.length === stored.length && shown.every((m, k) => m === stored[k]),
        `the followed log holds every line once (${shown.length} shown, ${stored.length} stored)`);
  const st = await chartState(page, 'train:loss');
  check(st.xs.every((x, k) => k === 0 || x > st.xs[k - 1]), 'the live chart has no duplicate point');
  await page.context().close();
}

async function allLogLines(stream) {
  const out = [];
  let after;
  for (;;) {
    const q = new URLSearchParams({group: '/aws/sagemaker/TrainingJobs', stream, limit: '1000'});
    if (after) q.set('after', after);
    const page = await server.get(`/api/v1/logs/events?${q}`);
    out.push(...page.events.map((e) => e.message));
    if (page.events.length < 1000) return out;
    after = page.next;
  }
}

// The live stream resumes after Last-Event-ID without duplicates: a job's log is
// read in the browser over two connections cut in the middle (fetch, which can
// send the header EventSource sends when it reconnects).
async function checkResume(defs, py) {
  const page = await newPage('light');
  await open(page, '/jobs');
  const job = runJob(args.trainwatch, server, 'resume', defs, py(['--epochs', '4', '--step-delay', '0.02']));
  const read = page.evaluate(async () => {
    const events = [];
    let lastId = null;
    async function connect(stopAfterLogs) {
      const ctl = new AbortController();
      const headers = lastId ? {'Last-Event-ID': lastId} : {};
      const r = await fetch('/api/v1/live?job=resume', {headers, signal: ctl.signal});
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let logs = 0;
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return 'closed';
        buf += value;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev = {type: 'message', data: '', id: null};
          for (const line of block.split('\n')) {
            const m = /^(\w+): ?(.*)$/.exec(line);
            if (!m) continue;
            if (m[1] === 'event') ev.type = m[2];
            else if (m[1] === 'data') ev.data += m[2];
            else if (m[1] === 'id') ev.id = m[2];
          }
          if (ev.id !== null) lastId = ev.id;
          if (ev.type === 'message' && !ev.data) continue;
          events.push(ev);
          if (ev.type === 'logs') logs++;
          if (stopAfterLogs && logs >= stopAfterLogs) { ctl.abort(); return 'cut'; }
          if (ev.type === 'job' && JSON.parse(ev.data).status === 'Completed') { ctl.abort(); return 'done'; }
        }
      }
    }
    await connect(3);
    await new Promise((r) => setTimeout(r, 700));  // lines keep coming meanwhile
    await connect(0);
    return events;
  });
  await job.done;
  const events = await read;
  const record = await server.get('/api/v1/jobs/resume');
  await sleep(500);
  const stored = await allLogLines(record.log_stream);
  const got = events.filter((e) => e.type === 'logs').map((e) => JSON.parse(e.data))
    .filter((d) => d.stream === record.log_stream).flatMap((d) => d.events.map((x) => x.message));
  const resets = events.filter((e) => e.type === 'reset').length;
  const ids = events.map((e) => e.id);
  check(new Set(ids).size === ids.length, `live: no event twice across the reconnect (${ids.length} events)`);
  // The first connection started after the job did: its first lines came by history.
  const tail = stored.slice(stored.length - got.length);
  check(resets === 0 && got.length > 0 && got.every((m, k) => m === tail[k]),
        `live: the reconnected stream resumes exactly (${got.length} lines by stream, ${stored.length} stored, ${resets} resets)`);
  await page.context().close();
}

try {
  await main();
} catch (e) {
  failures.push(`error: ${e.stack || e.message}`);
  console.error(e);
} finally {
  if (browser) await browser.close();
  await server.stop();
  if (consoleErrors.length) failures.push(`console errors:\n  ${consoleErrors.join('\n  ')}`);
  check(consoleErrors.length === 0, `no console errors (${consoleErrors.length})`);
  console.log(`screenshots: ${shots}`);
  if (failures.length) {
    console.log(`\n${failures.length} failed:\n${failures.join('\n')}\nserver log (tail):\n${server.log.slice(-3000)}`);
    process.exitCode = 1;
  } else {
    fs.rmSync(data, {recursive: true, force: true});
  }
}

// The dashboard measured in Chromium (BENCHMARKS.md, D rows): a real
// `trainwatch server` on a temporary data folder, Debian's Chromium driven by
// playwright-core (installed in web/ by the build).
//
//   time to first chart   job page opened in a fresh browser context until the
//                         chart of the job's one series of 1,000,000 points is
//                         drawn; and for a job of 200 series (10,000 points each)
//                         until the first chart is drawn, until every chart in
//                         the viewport (1280x900) is (the first screen), and
//                         until all 200 are, paging down a screen at a time as
//                         soon as the charts in view are drawn (the page builds
//                         and fetches a chart only near the viewport)
//   bytes                 what the browser received for that first view: the
//                         1M-point chart's own requests, and everything (page,
//                         scripts, uPlot, every chart)
//   latency               a running job prints `lat: <epoch ms>` every 50 ms; the
//                         open job page notes when each value reaches its chart
//                         (live stream, SSE) and is drawn (next animation frame)
//   the peer              with --prometheus: the same 1,000,000 points (an hour
//                         earlier) in Debian's prometheus (promtool makes the
//                         blocks), its classic graph page (/classic/graph: the
//                         only graph UI Debian's package serves) opened on them
//                         in a fresh context until its chart is drawn, in
//                         alternating pairs with trainwatch's 1M-point view;
//                         and whether the spike is among the points it drew
//
//   node bench/dashboard/dashboard_bench.mjs --trainwatch BIN --source REPO [--runs 7] [--prometheus]
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {execFileSync, spawn} from 'node:child_process';
import {freePort, sleep, Server, runJob, importFile, tempDir, writeSpikeSeries, waitFor} from
  '../../tests/browser/harness.mjs';

const argv = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const BIN = arg('trainwatch');
const SOURCE = arg('source', '.');
const RUNS = Number(arg('runs', 7));
const PROMETHEUS = argv.includes('--prometheus');
if (!BIN) {
  console.error('usage: dashboard_bench.mjs --trainwatch BIN --source REPO [--runs 7]');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(SOURCE, 'web'), 'package.json'));
const {chromium} = require('playwright-core');

const data = tempDir('tw-dash-bench-');
const t0 = Date.now() + 60000;
function writeWide(file, job, nSeries, n) {
  const fd = fs.openSync(file, 'w');
  for (let s = 0; s < nSeries; s++) {
    const ts = [];
    const vs = [];
    for (let i = 0; i < n; i++) {
      ts.push(t0 + i * 10);
      vs.push(Number((s + Math.sin(i / 500)).toFixed(4)));
    }
    fs.writeSync(fd, `${JSON.stringify({metric: {__name__: `m${String(s).padStart(3, '0')}`,
      namespace: '/aws/sagemaker/TrainingJobs', TrainingJobName: job}, values: vs, timestamps: ts})}\n`);
  }
  fs.closeSync(fd);
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return {median: q(0.5), min: s[0], max: s[s.length - 1], p99: q(0.99), n: s.length};
};
const fmt = (o, unit) => `median ${o.median.toFixed(1)} ${unit} (min ${o.min.toFixed(1)}, max ${o.max.toFixed(1)}, n ${o.n})`;

// The peer: Debian's prometheus over blocks promtool makes from the same
// values (writeSpikeSeries' formula), an hour in the past.
let promProcess = null;
const PROM_T0 = Date.now() - 3600000;
async function startPrometheus() {
  const dir = path.join(data, 'prometheus');
  fs.mkdirSync(dir);
  const om = path.join(dir, 'spike.om');
  const fd = fs.openSync(om, 'w');
  fs.writeSync(fd, '# TYPE spike:loss gauge\n');
  const labels = '{namespace="/aws/sagemaker/TrainingJobs",TrainingJobName="big-1m"}';
  for (let from = 0; from < 1000000; from += 100000) {
    let text = '';
    for (let i = from; i < from + 100000; i++) {
      const v = i === 654321 ? 50 : Number((1 + 0.2 * Math.sin(i / 40000) + 0.01 * ((i * 7919) % 13) / 13).toFixed(5));
      text += `spike:loss${labels} ${v} ${((PROM_T0 + i) / 1000).toFixed(3)}\n`;
    }
    fs.writeSync(fd, text);
  }
  fs.writeSync(fd, '# EOF\n');
  fs.closeSync(fd);
  execFileSync('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', om, path.join(dir, 'tsdb')], {stdio: 'ignore'});
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), 'global:\n  scrape_interval: 1h\nscrape_configs: []\n');
  const port = await freePort();
  promProcess = spawn('prometheus', [`--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, '--storage.tsdb.retention.time=10y',
    `--web.listen-address=127.0.0.1:${port}`], {stdio: 'ignore'});
  const base = `http://127.0.0.1:${port}`;
  await waitFor('prometheus', async () => (await fetch(`${base}/-/ready`)).ok, 60000, 200);
  return {base};
}

// One cold view of the classic graph page on the 1M points: until its chart's
// line is drawn; what its range query answered (points, step, max).
async function promView(prom) {
  const context = await browser.newContext({viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', {cacheDisabled: true});
  let total = 0;
  cdp.on('Network.loadingFinished', (e) => { total += e.encodedDataLength; });
  let answer = null;
  page.on('response', async (r) => {
    if (r.url().includes('/api/v1/query_range')) {
      const url = new URL(r.url());
      const body = await r.json().catch(() => null);
      const values = body?.data?.result?.[0]?.values || [];
      answer = {points: values.length, step: Number(url.searchParams.get('step')),
                max: Math.max(...values.map((v) => Number(v[1])))};
    }
  });
  const end = new Date(PROM_T0 + 1000000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
  const q = new URLSearchParams({'g0.expr': 'spike:loss', 'g0.tab': '0', 'g0.range_input': '1000s',
                                 'g0.end_input': end, 'g0.stacked': '0'});
  const start = Date.now();
  await page.goto(`${prom.base}/classic/graph?${q}`);
  await page.waitForFunction(() => document.querySelector('.graph svg path.path, .graph svg path'), null,
                             {timeout: 60000, polling: 'raf'});
  const first = Date.now() - start;
  await waitFor('the range query answer', async () => answer, 10000, 50);
  await sleep(200);
  await context.close();
  return {first, total, ...answer};
}

const server = new Server(BIN, data, await freePort());
let browser;
try {
  // The data: imported before the server takes the folder; the jobs that own
  // it run first so the samples lie within their span.
  const big = path.join(data, 'big.vmimport');
  writeSpikeSeries(big, {job: 'big-1m', metric: 'spike:loss', t0, n: 1000000, at: 654321, spike: 50});
  importFile(BIN, data, big);
  const wide = path.join(data, 'wide.vmimport');
  writeWide(wide, 'wide-200', 200, 10000);
  importFile(BIN, data, wide);
  await server.start();
  for (const name of ['big-1m', 'wide-200']) {
    const j = runJob(BIN, server, name, ['--no-rules', '--profile-interval', 'off'],
                     ['python3', '-c', 'print("imported")']);
    const r = await j.done;
    if (r.code !== 0) throw new Error(`job ${name} failed: ${r.out}`);
  }
  browser = await chromium.launch({executablePath: process.env.TW_CHROMIUM || '/usr/bin/chromium',
                                   headless: true, args: ['--no-sandbox']});
  const prom = PROMETHEUS ? await startPrometheus() : null;

  // One cold view of a job page: time until `ready` holds, and bytes by URL.
  async function view(job, ready) {
    const context = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', {cacheDisabled: true});
    const urls = new Map();
    const bytes = new Map();
    cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, e.request.url));
    cdp.on('Network.loadingFinished', (e) => bytes.set(e.requestId, e.encodedDataLength));
    const received = () => [...bytes.values()].reduce((a, b) => a + b, 0);
    const start = Date.now();
    await page.goto(`${server.base}/#/job/${job}`);
    const marks = await ready(page, start, received);
    await sleep(200);  // the last responses' loadingFinished
    let chartBytes = 0;
    let total = 0;
    for (const [id, b] of bytes) {
      total += b;
      if ((urls.get(id) || '').includes('/api/v1/chart') && (urls.get(id) || '').includes('spike%3Aloss')) chartBytes += b;
    }
    await context.close();
    return {...marks, chartBytes, total};
  }
  // Checked in the page at every animation frame (waitForSelector polls from
  // outside, up to 500 ms apart, which would round every figure up).
  const drawn = (page, selector) => page.waitForFunction((sel) => document.querySelector(sel), selector,
                                                         {timeout: 60000, polling: 'raf'});

  const bigRuns = [];
  const wideRuns = [];
  const promRuns = [];
  for (let i = 0; i < RUNS; i++) {
    bigRuns.push(await view('big-1m', async (page, start) => {
      await drawn(page, 'figure.chart[data-metric="spike:loss"][data-points]');
      return {first: Date.now() - start};
    }));
    if (prom) promRuns.push(await promView(prom));
    wideRuns.push(await view('wide-200', async (page, start, received) => {
      await drawn(page, 'figure.chart[data-points]');
      const first = Date.now() - start;
      // Every chart whose figure is in the viewport is drawn.
      const screenDrawn = () => page.waitForFunction(() => {
        const inView = [...document.querySelectorAll('figure.chart')].filter((f) => {
          const r = f.getBoundingClientRect();
          return r.bottom > 0 && r.top < innerHeight;
        });
        return document.querySelectorAll('figure.chart[data-metric^="m"]').length >= 200 &&
               inView.length > 0 && inView.every((f) => f.dataset.points);
      }, null, {timeout: 60000, polling: 'raf'});
      await screenDrawn();
      const screen = Date.now() - start;
      const screenBytes = received();
      const metricsDrawn = () => page.evaluate(() => [...document.querySelectorAll('figure.chart[data-metric^="m"]')]
        .filter((f) => f.dataset.points).length);
      while (await metricsDrawn() < 200) {
        const moved = await page.evaluate(() => {
          const y = scrollY;
          scrollBy(0, innerHeight);
          return scrollY !== y;
        });
        if (!moved) {
          await page.waitForFunction(() => [...document.querySelectorAll('figure.chart[data-metric^="m"]')]
            .filter((f) => f.dataset.points).length >= 200, null, {timeout: 60000, polling: 'raf'});
          break;
        }
        await screenDrawn();
      }
      return {first, screen, screenBytes, all: Date.now() - start};
    }));
  }
  console.log(`D1 first chart, 1 series of 1,000,000 points: ${fmt(stats(bigRuns.map((r) => r.first)), 'ms')}`);
  if (prom) {
    const ratios = bigRuns.map((r, k) => r.first / promRuns[k].first);
    const last = promRuns[promRuns.length - 1];
    const fmt2 = (o) => `median ${o.median.toFixed(2)}x (min ${o.min.toFixed(2)}, max ${o.max.toFixed(2)}, n ${o.n})`;
    console.log(`D1 peer: prometheus classic graph, the same 1,000,000 points: ${fmt(stats(promRuns.map((r) => r.first)), 'ms')}; ` +
                `trainwatch/prometheus ${fmt2(stats(ratios))}; prometheus drew ${last.points} points ` +
                `(step ${last.step} s, max ${last.max}: the spike of 50 ${last.max === 50 ? 'shown' : 'missed'}); ` +
                `bytes ${fmt(stats(promRuns.map((r) => r.total / 1000)), 'kB')}`);
  }
  console.log(`D2 bytes of that chart: ${fmt(stats(bigRuns.map((r) => r.chartBytes / 1000)), 'kB')}; ` +
              `whole first view: ${fmt(stats(bigRuns.map((r) => r.total / 1000)), 'kB')}`);
  console.log(`D3 first chart, 200 series: ${fmt(stats(wideRuns.map((r) => r.first)), 'ms')}; ` +
              `first screen drawn: ${fmt(stats(wideRuns.map((r) => r.screen)), 'ms')}; ` +
              `all 200, paging down: ${fmt(stats(wideRuns.map((r) => r.all)), 'ms')}; ` +
              `bytes by the first screen: ${fmt(stats(wideRuns.map((r) => r.screenBytes / 1000)), 'kB')}; ` +
              `bytes, all 200: ${fmt(stats(wideRuns.map((r) => r.total / 1000)), 'kB')}`);

  // Latency: print -> ingest -> live stream -> chart -> drawn.
  const context = await browser.newContext({viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  const script = 'import time,sys\n' +
    'time.sleep(3)\n' +
    'for i in range(400):\n' +
    '    print("lat: %d" % int(time.time() * 1000), flush=True)\n' +
    '    time.sleep(0.05)\n';
  const job = runJob(BIN, server, 'latency', ['--no-rules', '--metric', 'lat=lat: (\\d+)'],
                     ['python3', '-c', script]);
  await waitFor('the latency job', async () => {
    const r = await fetch(`${server.base}/api/v1/jobs/latency`);
    return r.ok;
  }, 30000, 100);
  await page.goto(`${server.base}/#/job/latency`);
  await page.evaluate(() => {
    window.__lat = [];
    let seen = 0;
    const tick = () => {
      const entry = (window.__tw?.job?.charts || []).find((c) => c.lines.some((s) => s.metric === 'lat'));
      const ys = entry?.chart ? entry.chart.uplot.data[1] : null;
      if (ys && ys.length > seen) {
        const now = Date.now();
        for (let i = seen; i < ys.length; i++) if (ys[i] > now - 600000) window.__lat.push(now - ys[i]);
        seen = ys.length;
      }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const r = await job.done;
  if (r.code !== 0) throw new Error(`latency job failed: ${r.out}`);
  await sleep(1500);
  const lat = await page.evaluate(() => window.__lat);
  await context.close();
  // The first points come with the page's own read of the history: only the
  // ones that arrived live count (after the first second of the page).
  const live = lat.slice(Math.min(20, lat.length));
  if (live.length) {
    console.log(`D4 line printed -> point drawn: ${fmt(stats(live), 'ms')}, p99 ${stats(live).p99.toFixed(1)} ms`);
  } else {
    console.log('D4 line printed -> point drawn: no live point was seen (is the live stream on?)');
  }
} finally {
  if (promProcess) promProcess.kill('SIGTERM');
  if (browser) await browser.close();
  await server.stop();
  fs.rmSync(data, {recursive: true, force: true});
}

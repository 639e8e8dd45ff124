// The dashboard of a server with --auth, in Debian's Chromium: a page asked
// for without credentials is a 401 with a Basic challenge; with a key of the
// auth file (the browser's own login prompt, given by playwright as
// httpCredentials) the jobs page, a job page and its live stream work as
// without --auth. A job sends to the server signed with the same key.
// Screenshots go to --artifacts. Exit 77 (skip) without Chromium.
//
//   node auth_test.mjs --trainwatch BIN --source REPO --artifacts DIR
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {parseArgs, skip, freePort, waitFor, Server, runJob, tempDir} from './harness.mjs';

const args = parseArgs(process.argv);
const CHROMIUM = process.env.TW_CHROMIUM || '/usr/bin/chromium';
if (Number(process.versions.node.split('.')[0]) < 20) {
  skip(`node ${process.versions.node} is older than playwright-core needs (20 or later)`);
}
if (!fs.existsSync(CHROMIUM)) skip(`${CHROMIUM} is not installed (Debian: apt-get install chromium)`);
const require = createRequire(path.join(path.resolve(args.source, 'web'), 'package.json'));
let chromium;
try {
  ({chromium} = require('playwright-core'));
} catch (e) {
  console.error(`playwright-core is missing in web/node_modules: build the trainwatch target ` +
                `(it runs npm ci there) or run npm ci in web/ (${e.message})`);
  process.exit(1);
}

const KEY = 'AKIDBROWSER';
const SECRET = 'browser-secret/1';
const failures = [];
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
}

const data = tempDir('tw-browser-auth-');
fs.writeFileSync(path.join(data, 'auth'), `${KEY} ${SECRET}\n`, {mode: 0o600});
const server = new Server(args.trainwatch, path.join(data, 'srv'), await freePort(),
                          ['--auth', path.join(data, 'auth')]);
const consoleErrors = [];
let browser;

async function main() {
  await server.start();
  browser = await chromium.launch({executablePath: CHROMIUM, headless: true, args: ['--no-sandbox']});

  // No credentials: the challenge, at which a browser asks for a login
  // (headless Chromium, which cannot ask, fails the navigation instead).
  const anonymous = await browser.newContext();
  const refused = await anonymous.request.get(`${server.base}/`);
  check(refused.status() === 401, `the dashboard without credentials answers 401 (${refused.status()})`);
  check((refused.headers()['www-authenticate'] || '').startsWith('Basic realm="trainwatch"'),
        'with a Basic challenge');
  let failed = '';
  await anonymous.newPage().then((p) => p.goto(`${server.base}/`)).catch((e) => { failed = e.message; });
  check(failed.includes('ERR_INVALID_AUTH_CREDENTIALS'), 'headless Chromium, which cannot ask, is refused the page');
  await anonymous.close();

  // A job that prints for a while, sent signed with the key.
  const job = runJob(args.trainwatch, server, 'auth-live', ['--metric', 'train:loss=loss: ([0-9.]+)'],
                     ['python3', '-c', 'import time\nfor i in range(120):\n    print(f"loss: {1/(i+1):.4f}", flush=True)\n    time.sleep(0.05)'],
                     {env: {AWS_ACCESS_KEY_ID: KEY, AWS_SECRET_ACCESS_KEY: SECRET}});
  const context = await browser.newContext({httpCredentials: {username: KEY, password: SECRET},
                                            viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`); });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  await page.goto(`${server.base}/#/jobs`);
  await page.waitForSelector('tr[data-job="auth-live"]', {timeout: 60000});
  check(true, 'with a key, the jobs page lists the signed job');
  await page.goto(`${server.base}/#/job/auth-live?x=time`);
  const points = () => page.evaluate(() => Number(document.querySelector('figure.chart[data-metric="train:loss"]')?.dataset.points || 0));
  await waitFor('the loss chart', async () => (await points()) > 0, 60000);
  const first = await points();
  await waitFor('more loss points while the job runs', async () => (await points()) > first, 60000);
  check(true, `the live chart grows under --auth (${first} -> ${await points()} points)`);
  const r = await job.done;
  check(r.code === 0, `the signed job ran (exit ${r.code})`);
  await page.waitForFunction(() => document.getElementById('job-status-pill').textContent === 'Completed', null, {timeout: 30000});
  check(true, 'the status turns Completed without a reload');
  await page.screenshot({path: path.join(args.artifacts, 'auth-job-light.png'), fullPage: true});
  await context.close();
}

fs.mkdirSync(args.artifacts, {recursive: true});
try {
  await main();
} catch (e) {
  failures.push(`error: ${e.stack || e.message}`);
  console.error(e);
} finally {
  if (browser) await browser.close();
  await server.stop();
  check(consoleErrors.length === 0, `no console errors (${consoleErrors.length})${consoleErrors.length ? `:\n  ${consoleErrors.join('\n  ')}` : ''}`);
  if (failures.length) {
    console.log(`\n${failures.length} failed:\n${failures.join('\n')}\nserver log (tail):\n${server.log.slice(-3000)}`);
    process.exitCode = 1;
  } else {
    fs.rmSync(data, {recursive: true, force: true});
  }
}

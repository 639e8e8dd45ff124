// What the dashboard's browser tests stand on: a real `trainwatch server` on a
// free loopback port over a temporary data folder, jobs run through it, and
// Debian's Chromium driven by playwright-core.
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const SKIP = 77;  // ctest's SKIP_RETURN_CODE for these tests

export function parseArgs(argv) {
  const out = {};
  for (let i = 2; i < argv.length; i++) {
    const m = /^--([\w-]+)$/.exec(argv[i]);
    if (!m) throw new Error(`unexpected argument ${argv[i]}`);
    out[m[1]] = argv[++i];
  }
  for (const need of ['trainwatch', 'source', 'artifacts']) {
    if (!out[need]) throw new Error(`--${need} is required`);
  }
  return out;
}

export function skip(reason) {
  console.log(`SKIPPED: ${reason}`);
  process.exit(SKIP);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const {port} = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what, fn, timeoutMs = 60000, everyMs = 200) {
  const until = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(everyMs);
  }
}

export class Server {
  // `extra`: more arguments of `trainwatch server` (e.g. --auth FILE).
  constructor(bin, dataDir, port, extra = []) {
    this.bin = bin;
    this.data = dataDir;
    this.port = port;
    this.extra = extra;
    this.base = `http://127.0.0.1:${port}`;
    this.log = '';
  }

  async start() {
    this.proc = spawn(this.bin, ['server', '--listen', `127.0.0.1:${this.port}`, '--data', this.data,
                                 ...this.extra],
                      {stdio: ['ignore', 'pipe', 'pipe']});
    const keep = (d) => { this.log += d.toString(); };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exited = new Promise((r) => this.proc.on('exit', (code, signal) => r({code, signal})));
    await waitFor('the server to answer /api/v1/health', async () => {
      if (this.proc.exitCode !== null) throw new Error(`the server exited: ${this.log}`);
      const r = await fetch(`${this.base}/api/v1/health`);
      return r.ok;
    }, 60000);
  }

  async get(p) {
    const r = await fetch(`${this.base}${p}`);
    const text = await r.text();
    if (!r.ok) throw new Error(`GET ${p}: HTTP ${r.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    await this.exited;
  }
}

// `trainwatch run` through the server; resolves with its exit status.
export function runJob(bin, server, name, args, command, {env = {}} = {}) {
  const proc = spawn(bin, ['run', '--name', name, '--endpoint', server.base, '--data', server.data,
                           ...args, '--', ...command],
                     {stdio: ['ignore', 'pipe', 'pipe'], env: {...process.env, ...env}});
  let out = '';
  proc.stdout.on('data', (d) => { out += d.toString(); });
  proc.stderr.on('data', (d) => { out += d.toString(); });
  const done = new Promise((resolve) => proc.on('exit', (code) => resolve({code, out})));
  return {proc, done};
}

export function importFile(bin, dataDir, file) {
  const r = spawnSync(bin, ['import', file, '--data', dataDir, '--keep', 'forever'], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`trainwatch import failed (${r.status}): ${r.stderr}`);
  return r.stderr + r.stdout;
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// 1,000,000 samples of one series, one per millisecond from t0, a smooth curve
// around 1 with a single-sample spike to `spike` at index `at`.
export function writeSpikeSeries(file, {job, metric, t0, n, at, spike}) {
  const fd = fs.openSync(file, 'w');
  const chunk = 100000;
  for (let from = 0; from < n; from += chunk) {
    const ts = [];
    const vs = [];
    for (let i = from; i < Math.min(n, from + chunk); i++) {
      ts.push(t0 + i);
      vs.push(i === at ? spike : Number((1 + 0.2 * Math.sin(i / 40000) + 0.01 * ((i * 7919) % 13) / 13).toFixed(5)));
    }
    const line = {metric: {__name__: metric, namespace: '/aws/sagemaker/TrainingJobs', TrainingJobName: job},
                  values: vs, timestamps: ts};
    fs.writeSync(fd, `${JSON.stringify(line)}\n`);
  }
  fs.closeSync(fd);
}

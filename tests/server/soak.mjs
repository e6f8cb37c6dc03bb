// Soak: a mixed run against one server while its engine is killed and frozen at random.
// Clients (the official openai client and raw sockets): streams and whole answers, cancels,
// hostile bodies, slowloris connections, queue overflow bursts; the engine gets SIGKILL or
// SIGSTOP every 6-10 s. Asserts that every request ends (a result, an HTTP error or an error
// event) before its deadline, that /health always answers within 2 s, that the front's memory
// stays bounded, and that slots and queue are empty afterwards.
// STRATA_SOAK_SECONDS sets the length (CI: 40; the long run: 600, docs/server.md).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { DIR, check, finish, loadOpenAI, metrics, model, sleep, startServer, waitHealthy } from './lib.mjs';

const OpenAI = await loadOpenAI();
const SECONDS = Number(process.env.STRATA_SOAK_SECONDS || 40);
const DEADLINE_MS = 30000;
const reports = path.join(DIR, 'reports-soak');
fs.rmSync(reports, { recursive: true, force: true });
fs.mkdirSync(reports, { recursive: true });
const srv = await startServer({ modelPath: model('tiny'), name: 'soak',
  args: ['--parallel', '2', '--queue', '4', '--stall-timeout', '2', '--restart-delay', '0.3', '--report-dir', reports,
    '--header-timeout', '5', '--max-body', '65536'] });
const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: DEADLINE_MS });
const kb = (k) => Number(fs.readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8').match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
const rand = (n) => Math.floor(Math.random() * n);
const end = Date.now() + SECONDS * 1000;
const tally = {};
const count = (k) => { tally[k] = (tally[k] || 0) + 1; };
const hung = [];

// Runs one request with a deadline; a request still open past it is a hang.
async function bounded(name, fn) {
  let timer;
  const deadline = new Promise((r) => { timer = setTimeout(() => r('HANG'), DEADLINE_MS); });
  const res = await Promise.race([fn().then((v) => v || 'ok', (e) => `error:${e && (e.status || e.name)}`), deadline]);
  clearTimeout(timer);
  if (res === 'HANG') hung.push(name);
  count(`${name}:${res}`);
}

async function streamer() {
  while (Date.now() < end) {
    await bounded('stream', async () => {
      const cancelAt = rand(3) === 0 ? 1 + rand(20) : -1;
      const s = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: `story ${rand(1e6)}` }],
        max_tokens: 50 + rand(400), ignore_eos: true, stream: true });
      let n = 0, fin = null;
      for await (const c of s) {
        if (++n === cancelAt) { s.controller.abort(); return 'cancelled'; }
        if (c.choices[0] && c.choices[0].finish_reason) fin = c.choices[0].finish_reason;
      }
      assert.ok(fin, 'a stream that ends without an error has a finish_reason');
      return 'finished';
    });
  }
}

async function whole() {
  while (Date.now() < end) {
    await bounded('whole', async () => {
      const r = await client.completions.create({ model: 'tiny', prompt: `once ${rand(1e6)}`, max_tokens: 1 + rand(200), ignore_eos: true });
      assert.ok(r.usage.completion_tokens >= 1);
    });
  }
}

async function burst() { // queue overflow: more than slots + queue at once
  while (Date.now() < end) {
    await Promise.all(Array.from({ length: 10 }, () => bounded('burst', async () => {
      const r = await fetch(`${srv.base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'x', max_tokens: 30, ignore_eos: true }) });
      await r.text();
      if (r.status === 429) assert.ok(r.headers.get('retry-after'));
      return String(r.status);
    })));
    await sleep(500 + rand(1000));
  }
}

async function hostile() {
  const bodies = ['{"model":', 'x'.repeat(70000), '{"prompt":"a","prompt":"b"}', '[' .repeat(100) + ']'.repeat(100),
    '{"messages":[{"role":"user","content":"\\u0000"}]}', '{"prompt":"a","max_tokens":-5}'];
  while (Date.now() < end) {
    await bounded('hostile', async () => {
      const r = await fetch(`${srv.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: bodies[rand(bodies.length)] });
      await r.text();
      assert.ok(r.status >= 400 && r.status < 600, `status ${r.status}`);
      return String(r.status);
    });
    await sleep(50);
  }
}

async function slowloris() {
  const socks = [];
  while (Date.now() < end) {
    const s = net.connect(srv.port, '127.0.0.1');
    s.on('error', () => {});
    s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');
    socks.push(s);
    for (const t of socks) if (!t.destroyed) t.write('X-a: b\r\n');
    await sleep(300);
  }
  for (const s of socks) s.destroy();
}

async function health() {
  let worst = 0;
  while (Date.now() < end) {
    const t0 = Date.now();
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 2000);
    try {
      const r = await fetch(`${srv.base}/health`, { signal: ctl.signal });
      await r.text();
      assert.ok(r.status === 200 || r.status === 503);
    } catch (e) { hung.push(`health:${e.name}`); }
    clearTimeout(timer);
    worst = Math.max(worst, Date.now() - t0);
    await sleep(250);
  }
  return worst;
}

async function chaos() {
  let kills = 0, stops = 0;
  while (Date.now() < end - 8000) {
    await sleep(6000 + rand(4000));
    const h = await (await fetch(`${srv.base}/health`)).json().catch(() => ({}));
    if (!h.engine_pid) continue;
    if (rand(2)) { process.kill(h.engine_pid, 'SIGKILL'); kills++; } else { process.kill(h.engine_pid, 'SIGSTOP'); stops++; }
  }
  return { kills, stops };
}

await check(`soak ${SECONDS} s: every request ends, /health answers, memory bounded, slots empty after`, async () => {
  const rss0 = kb('VmRSS');
  const [worst, chaosRes] = await Promise.all([health(), chaos(), streamer(), streamer(), whole(), burst(), hostile(), slowloris()])
    .then((r) => [r[0], r[1]]);
  await waitHealthy(srv, 30000);
  let m;
  for (let i = 0; i < 100; i++) {
    m = await metrics(srv);
    if (m.strata_slots_busy === 0 && m.strata_queue_length === 0) break;
    await sleep(100);
  }
  const rss1 = kb('VmRSS'), hwm = kb('VmHWM');
  console.log(`     ${JSON.stringify(chaosRes)}; restarts ${m.strata_engine_restarts_total}; /health slowest ${worst} ms; ` +
    `front RSS ${(rss0 / 1024).toFixed(1)} -> ${(rss1 / 1024).toFixed(1)} MiB (peak ${(hwm / 1024).toFixed(1)})`);
  console.log(`     outcomes: ${JSON.stringify(tally)}`);
  assert.deepEqual(hung, [], 'no request or /health probe hung');
  assert.equal(m.strata_slots_busy, 0);
  assert.equal(m.strata_queue_length, 0);
  // a sanitizer build keeps freed memory in quarantine (up to 256 MiB): its RSS says little
  const sanitized = fs.readFileSync(fs.realpathSync(process.env.STRATA_BIN)).includes('__asan_init');
  if (!sanitized) {
    assert.ok(hwm < 256 * 1024, `front peak RSS ${hwm} KiB`);
    assert.ok(rss1 - rss0 < 64 * 1024, `front RSS grew ${(rss1 - rss0) / 1024} MiB`);
  }
  assert.ok(chaosRes.kills + chaosRes.stops >= 1 || SECONDS < 20, 'the engine was hit at least once');
});

await finish([srv]);

// Shared helpers of the server tests: start `strata serve` on a free port with a generated
// model, talk to it with the official `openai` client and with raw HTTP, read /metrics.
// Environment (set by tests/server.cmake): STRATA_BIN (the strata executable),
// STRATA_TEST_DIR (generated models, reports), STRATA_NODE_DIR (where `npm install openai` put
// node_modules). A test exits 77 (ctest: skipped) only when the openai package is absent.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const STRATA = process.env.STRATA_BIN;
export const DIR = process.env.STRATA_TEST_DIR;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (!STRATA || !DIR) {
  console.error('STRATA_BIN and STRATA_TEST_DIR must be set (run through ctest)');
  process.exit(2);
}

export async function loadOpenAI() {
  const nodeDir = process.env.STRATA_NODE_DIR || '';
  const entry = path.join(nodeDir, 'node_modules', 'openai', 'index.mjs');
  if (!fs.existsSync(entry)) {
    console.log(`SKIP: the openai npm package is not installed in ${nodeDir} ` +
      '(the server.setup test runs `npm install openai` there; it needs the npm registry)');
    process.exit(77);
  }
  return (await import(pathToFileURL(entry).href)).default;
}

export function model(name) {
  const p = path.join(DIR, `${name}.gguf`);
  if (!fs.existsSync(p)) throw new Error(`${p} is missing: the server.setup test writes it`);
  return p;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Start a server; resolves once /health answers 200. `log` collects its stderr. `connect`: the
// address the tests reach it at (a --host in args may need another than 127.0.0.1); `scheme`:
// 'https' for a server given --ssl-key-file/--ssl-cert-file.
export async function startServer({ modelPath, args = [], env = {}, name = 'server', connect = '127.0.0.1', scheme = 'http' }) {
  const port = await freePort();
  const argv = ['serve', '-m', modelPath, '--port', String(port), ...args];
  const proc = spawn(STRATA, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const srv = {
    port, proc, base: `${scheme}://${connect}:${port}`, log: '', exited: null,
    logFile: path.join(DIR, `${name}.log`),
  };
  const out = fs.createWriteStream(srv.logFile);
  const collect = (d) => { srv.log += d.toString(); out.write(d); };
  proc.stdout.on('data', collect);
  proc.stderr.on('data', collect);
  proc.on('exit', (code, sig) => { srv.exited = { code, sig }; });
  srv.stop = async () => {
    if (srv.exited) return srv.exited;
    proc.kill('SIGTERM');
    for (let i = 0; i < 100 && !srv.exited; i++) await sleep(50);
    if (!srv.exited) proc.kill('SIGKILL');
    for (let i = 0; i < 40 && !srv.exited; i++) await sleep(50);
    out.end();
    return srv.exited;
  };
  process.on('exit', () => { if (!srv.exited) proc.kill('SIGKILL'); });
  await waitHealthy(srv, 30000);
  console.log(`started: strata ${argv.join(' ')}  (log: ${srv.logFile})`);
  return srv;
}

export async function waitHealthy(srv, timeoutMs = 20000) {
  const t0 = Date.now();
  for (;;) {
    if (srv.exited) throw new Error(`the server exited (${JSON.stringify(srv.exited)}):\n${srv.log}`);
    try {
      const r = await fetch(`${srv.base}/health`);
      if (r.status === 200) return await r.json();
    } catch { /* not listening yet */ }
    if (Date.now() - t0 > timeoutMs) throw new Error(`/health not 200 after ${timeoutMs} ms:\n${srv.log}`);
    await sleep(50);
  }
}

// /metrics as {name: value}; waits for fresh engine figures (the engine answers between steps).
// srv.headers (e.g. the API key) go with the request.
export async function metrics(srv, timeoutMs = 20000) {
  const t0 = Date.now();
  for (;;) {
    const r = await fetch(`${srv.base}/metrics`, { headers: srv.headers || {} });
    const text = await r.text();
    const m = {};
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const [k, v] = line.split(' ');
      m[k] = Number(v);
    }
    if (m.strata_engine_stats_fresh === 1 || Date.now() - t0 > timeoutMs) return m;
  }
}

// POST a body (object or raw string) and read the whole answer. For SSE answers, `events` are
// the data payloads in order (as the SDKs split them: events end at a blank line).
export async function post(srv, route, body, headers = {}) {
  const r = await fetch(`${srv.base}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await r.text();
  const res = { status: r.status, headers: r.headers, text, json: null, events: null };
  if ((r.headers.get('content-type') || '').startsWith('text/event-stream')) res.events = sseEvents(text);
  else { try { res.json = JSON.parse(text); } catch { /* left null */ } }
  return res;
}

// Split an SSE body into the data of each event; checks the framing on the way.
export function sseEvents(text) {
  if (!text.endsWith('\n\n')) throw new Error(`SSE body does not end with a blank line: ${JSON.stringify(text.slice(-80))}`);
  const events = [];
  for (const block of text.slice(0, -2).split('\n\n')) {
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (!line.startsWith('data: ')) throw new Error(`SSE line that is not data: ${JSON.stringify(line)}`);
      data.push(line.slice(6));
    }
    if (data.length) events.push(data.join('\n'));
  }
  return events;
}

// Read a streamed answer chunk by chunk; onEvent(data) is called for every event as it arrives.
export async function stream(srv, route, body, onEvent, signal) {
  const r = await fetch(`${srv.base}${route}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal,
  });
  if (r.status !== 200) return { status: r.status, text: await r.text(), events: [] };
  const dec = new TextDecoder();
  let buf = '';
  const events = [];
  for await (const part of r.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      const data = ev.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      events.push(data);
      if (onEvent) await onEvent(data, events.length - 1);
    }
  }
  if (buf.length) throw new Error(`SSE body ends inside an event: ${JSON.stringify(buf)}`);
  return { status: r.status, events };
}

// A tiny runner: named checks run in order; a failure is printed and the process exits 1.
const results = [];
export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push([name, true]);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([name, false]);
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

export function finish(servers = []) {
  return (async () => {
    for (const s of servers) await s.stop();
    const bad = results.filter((r) => !r[1]);
    console.log(`${results.length - bad.length}/${results.length} checks passed`);
    if (bad.length) {
      for (const s of servers) console.log(`--- server log ${s.logFile} (tail) ---\n${s.log.slice(-4000)}`);
      process.exit(1);
    }
    process.exit(0);
  })();
}

// ---- GGUF patching: copies of a test model with one thing broken, byte-patched in place ----
// (the layout is GGUF v3: header, metadata, tensor infos, data; patches keep every length)
function ggufWalk(buf) {
  let o = 24;
  const str = () => { const n = Number(buf.readBigUInt64LE(o)); const s = buf.toString('utf8', o + 8, o + 8 + n); o += 8 + n; return s; };
  const sizes = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (t) => {
    if (t === 8) { str(); return; }
    if (t === 9) {
      const et = buf.readUInt32LE(o); const n = Number(buf.readBigUInt64LE(o + 4)); o += 12;
      for (let i = 0; i < n; i++) skip(et);
      return;
    }
    o += sizes[t];
  };
  const nt = Number(buf.readBigUInt64LE(8)), nkv = Number(buf.readBigUInt64LE(16));
  const kv = {}, tensors = {};
  for (let i = 0; i < nkv; i++) {
    const k = str(); const t = buf.readUInt32LE(o); o += 4;
    kv[k] = { type: t, at: o };
    skip(t);
  }
  for (let i = 0; i < nt; i++) {
    const nameAt = o + 8; const name = str(); const nd = buf.readUInt32LE(o); o += 4;
    tensors[name] = { nameAt, dimsAt: o, nd };
    o += 8 * nd + 4 + 8;
  }
  return { kv, tensors, end: o };
}

// A copy of a GGUF with u32 keys added ({key: value}): the keys go first in the metadata and
// the tensor data moves to the next aligned offset (tensor offsets are relative to it).
export function modelWithKeys(src, dst, keys) {
  const buf = fs.readFileSync(src);
  const { kv, end } = ggufWalk(buf);
  const align = kv['general.alignment'] ? buf.readUInt32LE(kv['general.alignment'].at) : 32;
  const parts = Object.entries(keys).map(([k, v]) => {
    const b = Buffer.alloc(8 + Buffer.byteLength(k) + 8);
    b.writeBigUInt64LE(BigInt(Buffer.byteLength(k)), 0);
    b.write(k, 8, 'utf8');
    b.writeUInt32LE(4, 8 + Buffer.byteLength(k)); // GGUF type 4: uint32
    b.writeUInt32LE(v, 12 + Buffer.byteLength(k));
    return b;
  });
  const head = Buffer.from(buf.subarray(0, 24));
  head.writeBigUInt64LE(buf.readBigUInt64LE(16) + BigInt(parts.length), 16);
  const meta = Buffer.concat([head, ...parts, buf.subarray(24, end)]);
  const pad = (align - (meta.length % align)) % align;
  const dataAt = Math.ceil(end / align) * align;
  fs.writeFileSync(dst, Buffer.concat([meta, Buffer.alloc(pad), buf.subarray(dataAt)]));
  return dst;
}

// patches: { u32: {key: value}, dims: {tensor: [ne0, ne1, ...]}, rename: {tensor: sameLengthName} }
export function patchedModel(src, dst, patches) {
  const buf = fs.readFileSync(src);
  const { kv, tensors } = ggufWalk(buf);
  for (const [k, v] of Object.entries(patches.u32 || {})) buf.writeUInt32LE(v, kv[k].at);
  for (const [n, dims] of Object.entries(patches.dims || {}))
    dims.forEach((d, i) => buf.writeBigUInt64LE(BigInt(d), tensors[n].dimsAt + 8 * i));
  for (const [n, to] of Object.entries(patches.rename || {})) {
    if (to.length !== n.length) throw new Error('a renamed tensor keeps its name length');
    buf.write(to, tensors[n].nameAt, 'utf8');
  }
  fs.writeFileSync(dst, buf);
  return dst;
}

// Start a server that is expected to exit on its own: resolves to { code, sig, log, ms }.
export async function runToExit(argv, { env = {}, timeoutMs = 20000 } = {}) {
  const t0 = Date.now();
  const proc = spawn(STRATA, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const [code, sig] = await new Promise((r) => proc.on('exit', (c, s) => r([c, s])));
  clearTimeout(timer);
  return { code, sig, log, ms: Date.now() - t0 };
}

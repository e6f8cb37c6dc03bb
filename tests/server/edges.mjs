// Protocol edges, authentication before memory, and well-formed output.
//  - the API key is checked on the headers: unauthenticated bodies are never buffered (the
//    front's peak RSS stays flat under 200 x 1 MB bodies); all bodies held at once are capped
//    (--max-buffered); "bearer" in any case; the key from a file or STRATA_API_KEY
//  - PUT/PATCH get 405 with Allow; /health answers GET/HEAD only; 429 carries Retry-After
//  - --alias with quotes is valid JSON in /v1/models; error bodies are valid UTF-8; a NUL in a
//    string is a 400; a duplicate key is a 400 naming it; `param` is "prompt" on completions
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { DIR, check, finish, freePort, model, post, runToExit, sleep, startServer } from './lib.mjs';

const KEY = 'sk-edge-0123456789';
const keyFile = path.join(DIR, 'edges-key.txt');
fs.writeFileSync(keyFile, `${KEY}\n`);
const ALIAS = 'ti"ny\\al\u00e9';
const srv = await startServer({ modelPath: model('tiny'), name: 'edges',
  args: ['--api-key-file', keyFile, '--alias', ALIAS, '--max-body', '2000000', '--max-buffered', '8000000',
    '--parallel', '1', '--queue', '1', '--ctx', '256'] });
const auth = { authorization: `Bearer ${KEY}` };
srv.headers = auth; // /metrics needs the key too
const rss = (pid, key) => Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`))[1]);

// n connections that each send headers and a body of `size` bytes; resolves to the statuses
function flood(n, size, headers) {
  const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n${headers}\r\n`;
  const body = Buffer.alloc(size, 32);
  return Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1', () => { s.write(head); s.write(body); });
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('error', () => {});
    s.on('close', () => resolve(Number((got.match(/^HTTP\/1\.1 (\d+)/) || [])[1] || 0)));
    setTimeout(() => s.destroy(), 15000);
  })));
}

await check('the key is checked before any body byte is kept: peak RSS stays flat', async () => {
  const base = rss(srv.proc.pid, 'VmHWM');
  const st = await flood(200, 1000000, '');
  const grew = (rss(srv.proc.pid, 'VmHWM') - base) / 1024;
  console.log(`     200 x 1 MB unauthenticated bodies: statuses ${[...new Set(st)].join(',')}; peak RSS grew ${grew.toFixed(1)} MiB`);
  assert.ok(st.every((x) => x === 401 || x === 0), `only 401s (or closed): ${[...new Set(st)]}`);
  // how many clients read their 401 before the server closes depends on scheduling (a loaded CI
  // machine saw few): at least one must, the rest may see the close
  assert.ok(st.some((x) => x === 401), 'no client got its 401');
  assert.ok(grew < 20, `peak RSS grew ${grew} MiB`);
});

await check('bodies held at once are capped (--max-buffered): 503 server_busy past it', async () => {
  const base = rss(srv.proc.pid, 'VmHWM');
  const st = await flood(60, 1000000, `Authorization: bearer ${KEY}\r\n`); // bearer in lower case
  const grew = (rss(srv.proc.pid, 'VmHWM') - base) / 1024;
  const counts = {};
  for (const x of st) counts[x] = (counts[x] || 0) + 1;
  console.log(`     60 x 1 MB authenticated bodies: ${JSON.stringify(counts)}; peak RSS grew ${grew.toFixed(1)} MiB`);
  assert.ok((counts[400] || 0) > 0, 'bodies within the cap were read (and refused as bad JSON)');
  assert.ok(grew < 40, `peak RSS grew ${grew} MiB`);
  const h = await fetch(`${srv.base}/metrics`, { headers: auth });
  const m = await h.text();
  assert.match(m, /strata_http_buffered_bytes 0\n/, 'nothing stays buffered');
});

await check('/metrics and /slots need the key (as in llama-server); --metrics-auth open opens them, not the API', async () => {
  for (const route of ['/metrics', '/slots']) {
    assert.equal((await fetch(`${srv.base}${route}`)).status, 401, route);
    assert.equal((await fetch(`${srv.base}${route}`, { headers: auth })).status, 200, route);
  }
  assert.equal((await fetch(`${srv.base}/health`)).status, 200, '/health stays open');
  const open = await startServer({ modelPath: model('tiny'), name: 'edges-open',
    args: ['--api-key', 'sk-open', '--metrics-auth', 'open'] });
  try {
    assert.equal((await fetch(`${open.base}/metrics`)).status, 200);
    assert.equal((await fetch(`${open.base}/slots`)).status, 200);
    assert.equal((await fetch(`${open.base}/props`)).status, 401, 'the other utility routes keep the key');
    assert.equal((await post(open, '/v1/completions', { prompt: 'x', max_tokens: 1 })).status, 401);
  } finally { await open.stop(); }
  const bad = await runToExit(['serve', '-m', model('tiny'), '--port', String(await freePort()), '--metrics-auth', 'maybe']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.log, /--metrics-auth wants key or open/);
});

await check('key from a file, "bearer" in any case; STRATA_API_KEY', async () => {
  assert.equal((await post(srv, '/v1/models', '', {})).status, 405); // wrong method before the key
  const r = await fetch(`${srv.base}/v1/models`, { headers: { authorization: `BEARER ${KEY}` } });
  assert.equal(r.status, 200);
  assert.equal((await fetch(`${srv.base}/v1/models`, { headers: { authorization: `Bearer ${KEY}x` } })).status, 401);
  const env = await startServer({ modelPath: model('tiny'), name: 'edges-env', env: { STRATA_API_KEY: 'sk-env' } });
  try {
    assert.equal((await fetch(`${env.base}/v1/models`)).status, 401);
    assert.equal((await fetch(`${env.base}/v1/models`, { headers: { authorization: 'Bearer sk-env' } })).status, 200);
  } finally { await env.stop(); }
  const big = await runToExit(['serve', '-m', model('tiny'), '--port', String(await freePort()), '--max-body', String(1 << 30)]);
  assert.equal(big.code, 2, 'an unbounded --max-body is refused');
});

await check('methods: PUT/PATCH 405 with Allow, /health GET/HEAD only', async () => {
  for (const method of ['PUT', 'PATCH', 'DELETE']) {
    const r = await fetch(`${srv.base}/v1/chat/completions`, { method, headers: auth, body: method === 'DELETE' ? undefined : '{"a":1}' });
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.get('allow'), 'POST');
    assert.equal((await r.json()).error.code, 'method_not_allowed');
  }
  const p = await fetch(`${srv.base}/health`, { method: 'POST', body: 'x' });
  assert.equal(p.status, 405);
  assert.equal(p.headers.get('allow'), 'GET, HEAD');
  assert.equal((await fetch(`${srv.base}/health`, { method: 'HEAD' })).status, 200);
});

await check('429 carries Retry-After', async () => {
  const long = { prompt: 'Once', max_tokens: 2000, ignore_eos: true };
  const rs = await Promise.all(Array.from({ length: 6 }, () => post(srv, '/v1/completions', long, auth)));
  const limited = rs.filter((r) => r.status === 429);
  assert.ok(limited.length > 0, `statuses ${rs.map((r) => r.status)}`);
  for (const r of limited) assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After on 429');
});

await check('/v1/models: an alias with quotes and backslashes is valid JSON', async () => {
  const r = await fetch(`${srv.base}/v1/models`, { headers: auth });
  const j = JSON.parse(await r.text());
  assert.equal(j.data[0].id, ALIAS);
});

await check('error bodies are valid UTF-8', async () => {
  const body = Buffer.concat([Buffer.from('{"model":"x\xff\xfe'.split('').map((c) => c.charCodeAt(0))), Buffer.from('","prompt":"a"}')]);
  const r = await fetch(`${srv.base}/v1/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
  const raw = new Uint8Array(await r.arrayBuffer());
  const text = new TextDecoder('utf-8', { fatal: true }).decode(raw); // throws on invalid UTF-8
  assert.equal(r.status, 404);
  assert.match(JSON.parse(text).error.message, /x\uFFFD\uFFFD/);
  const route = await fetch(`${srv.base}/v1/\xff`);
  new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(await route.arrayBuffer()));
});

await check('NUL in a string, duplicate keys, param on completions', async () => {
  const nul = await post(srv, '/v1/completions', '{"prompt":"a\\u0000b","max_tokens":1}', auth);
  assert.equal(nul.status, 400, nul.text);
  assert.match(nul.json.error.message, /NUL/);
  const escaped = await post(srv, '/v1/completions', '{"prompt":"a\\\\u0000b","max_tokens":1}', auth);
  assert.equal(escaped.status, 200, `an escaped backslash before u0000 is text: ${escaped.text}`);
  const dup = await post(srv, '/v1/completions', '{"prompt":"a","prompt":"b","max_tokens":1}', auth);
  assert.equal(dup.status, 400);
  assert.equal(dup.json.error.code, 'duplicate_key');
  assert.equal(dup.json.error.param, 'prompt');
  const many = '{' + Array.from({ length: 30000 }, (_, i) => `"k${i}":1`).join(',') + ',"prompt":"a"}';
  const t0 = Date.now();
  assert.equal((await post(srv, '/v1/completions', many, auth)).status, 200);
  assert.ok(Date.now() - t0 < 2000, 'many keys are checked fast');
  const longp = await post(srv, '/v1/completions', { prompt: 'word '.repeat(400), max_tokens: 1 }, auth);
  assert.equal(longp.status, 400);
  assert.equal(longp.json.error.code, 'context_length_exceeded');
  assert.equal(longp.json.error.param, 'prompt');
});

await finish([srv]);

// Connection exhaustion and half-closed clients. 1,000 idle, slow-header and keep-alive
// connections are held open while 64 streaming requests all complete and /health keeps
// answering; the header deadline closes slow and idle connections; a client that half-closes
// its side after a complete request (with its last bytes or later, while its request runs or
// waits in the queue) still gets its answer (streamed, whole, every choice of an n > 1 one).
import assert from 'node:assert/strict';
import net from 'node:net';
import { check, finish, metrics, model, sleep, startServer, stream } from './lib.mjs';

const N_HELD = Number(process.env.STRATA_HELD || 1000), N_STREAMS = 64, N_TOKENS = Number(process.env.STRATA_STREAM_TOKENS || 16);

function connect(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

// A raw request; resolves to the bytes received until the server closes. `halfClose`: the
// client shuts down its sending side that many ms after the request (0: with the request's
// last bytes, in the same segment).
function rawRequest(port, text, halfClose) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      if (halfClose === 0) s.end(text);
      else s.write(text);
      if (halfClose > 0) setTimeout(() => s.end(), halfClose);
    });
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('end', () => { s.destroy(); resolve(got); });
    s.on('error', reject);
    setTimeout(() => { s.destroy(); resolve(got); }, 60000); // a sanitizer build generates ~50x slower
  });
}

const post = (path, body, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

// STRATA_SERVE_ARGS replaces the deadline option (to measure a build without it)
const extra = process.env.STRATA_SERVE_ARGS !== undefined ? process.env.STRATA_SERVE_ARGS.split(' ').filter(Boolean)
  : ['--header-timeout', '120'];
const srv = await startServer({ modelPath: model('tiny'), name: 'connections', args: ['--parallel', '4', '--queue', '80', ...extra] });

await check('a half-closed client gets its answer (not streamed, streamed, GET)', async () => {
  // ~3,000 tokens: the generation runs well past the half-close
  const body = JSON.stringify({ prompt: 'Once', max_tokens: 3000, ignore_eos: true });
  const a = await rawRequest(srv.port, post('/v1/completions', body, 'Connection: close\r\n'), 100);
  assert.match(a, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n|^HTTP\/1\.1 200 OK\r\n/, a.slice(0, 200));
  assert.match(a, /"text_completion"/);
  assert.match(a, /"completion_tokens":3000/);
  const sbody = JSON.stringify({ prompt: 'Once', max_tokens: 3000, ignore_eos: true, stream: true });
  const b = await rawRequest(srv.port, post('/v1/completions', sbody, 'Connection: close\r\n'), 100);
  assert.match(b, /HTTP\/1\.1 200 OK\r\n/);
  assert.match(b, /"finish_reason":"length"/);
  assert.match(b, /data: \[DONE\]/);
  const c = await rawRequest(srv.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 0);
  assert.match(c, /^HTTP\/1\.1 200 OK/);
});

await check('a half-closed client of an n = 2 request gets both choices', async () => {
  // the first choice ends while the client is half-closed: the second still runs, one answer
  const body = JSON.stringify({ prompt: 'Once', max_tokens: 1500, ignore_eos: true, n: 2, seed: 3 });
  for (const when of [0, 100]) {
    const a = await rawRequest(srv.port, post('/v1/completions', body, 'Connection: close\r\n'), when);
    assert.match(a, /HTTP\/1\.1 200 OK\r\n/, a.slice(0, 200));
    assert.match(a, /"index":1/);
    assert.match(a, /"completion_tokens":3000/);
  }
});

await check(`${N_HELD} idle, slow and keep-alive connections held while ${N_STREAMS} streams complete`, async () => {
  const held = [];
  const t0 = Date.now();
  for (let i = 0; i < N_HELD; i++) {
    const s = await connect(srv.port);
    s.on('error', () => {});
    s.on('data', () => {});
    held.push(s);
    if (i % 3 === 1) s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le'); // slow headers
    if (i % 3 === 2) s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'); // then idle keep-alive
  }
  console.log(`     ${N_HELD} connections opened in ${Date.now() - t0} ms`);
  const trickle = setInterval(() => { for (let i = 1; i < held.length; i += 3) held[i].write('n'); }, 2000);
  let healthMax = 0, healthN = 0, stop = false;
  const prober = (async () => {
    while (!stop) {
      const h0 = Date.now();
      const r = await fetch(`${srv.base}/health`);
      assert.equal(r.status, 200);
      await r.text();
      healthMax = Math.max(healthMax, Date.now() - h0);
      healthN++;
      await sleep(100);
    }
  })();
  const s0 = Date.now();
  const results = await Promise.all(Array.from({ length: N_STREAMS }, (_, i) =>
    stream(srv, '/v1/completions', { prompt: `Once ${i}`, max_tokens: N_TOKENS, ignore_eos: true, stream: true })));
  const streamsMs = Date.now() - s0;
  stop = true;
  await prober;
  clearInterval(trickle);
  const m = await metrics(srv);
  console.log(`     ${N_STREAMS} streams done in ${streamsMs} ms; /health answered ${healthN} times, slowest ${healthMax} ms; ` +
    `${m.strata_http_connections} connections open`);
  for (const r of results) {
    assert.equal(r.status, 200);
    assert.equal(r.events[r.events.length - 1], '[DONE]');
    const fin = JSON.parse(r.events[r.events.length - 2]);
    assert.equal(fin.choices[0].finish_reason, 'length');
  }
  assert.ok(healthMax < 1000, `/health took ${healthMax} ms`);
  assert.ok(m.strata_http_connections >= N_HELD, `${m.strata_http_connections} connections open`);
  const open = held.filter((s) => !s.destroyed && s.readyState === 'open').length;
  assert.equal(open, N_HELD, 'every held connection is still open');
  for (const s of held) s.destroy();
});
await srv.stop();

const one = await startServer({ modelPath: model('tiny'), name: 'connections-queued', args: ['--parallel', '1'] });
await check('half-closed clients whose requests wait in the queue (streamed, not, n = 2 of both) get their answers', async () => {
  // the one slot is busy: the half-close comes long before the first token of each
  const busy = fetch(`${one.base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once', max_tokens: 1500, ignore_eos: true }) });
  await sleep(200);
  const req = (extra) => post('/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 100, ignore_eos: true, ...extra }),
    'Connection: close\r\n');
  const streamed = { stream: true, stream_options: { include_usage: true } };
  const [s0, s1, w0, n2, sn2] = await Promise.all([rawRequest(one.port, req(streamed), 0),
    rawRequest(one.port, req(streamed), 100), rawRequest(one.port, req({}), 100),
    rawRequest(one.port, req({ n: 2, seed: 1 }), 0), rawRequest(one.port, req({ ...streamed, n: 2, seed: 1 }), 100)]);
  for (const s of [s0, s1]) {
    assert.match(s, /HTTP\/1\.1 200 OK\r\n/, s.slice(0, 200));
    assert.match(s, /"completion_tokens":100/);
    assert.match(s, /"finish_reason":"length"/);
    assert.match(s, /data: \[DONE\]/);
  }
  assert.match(w0, /"completion_tokens":100/);
  assert.match(n2, /"index":1/);
  assert.match(n2, /"completion_tokens":200/);
  assert.match(sn2, /"index":1,"text"/);
  assert.equal((sn2.match(/"finish_reason":"length"/g) || []).length, 2, 'both streamed choices end');
  assert.match(sn2, /"completion_tokens":200/);
  assert.match(sn2, /data: \[DONE\]\n\n(\r\n0\r\n\r\n)?$/, "[DONE] ends it (chunked when the library wrote it)");
  assert.equal((await busy).status, 200);
  // a client that closed both sides is gone: its request is cancelled, not run to its end
  const before = (await metrics(one)).strata_generated_tokens_total;
  const gone = net.connect(one.port, '127.0.0.1', () => { gone.write(req({ max_tokens: 4000 })); setTimeout(() => gone.destroy(), 50); });
  gone.on('error', () => {});
  await sleep(300);
  let m;
  for (let i = 0; i < 100 && (m = await metrics(one)).strata_slots_busy > 0; i++) await sleep(100);
  const ran = m.strata_generated_tokens_total - before;
  console.log(`     the gone client's request ran ${ran} of 4000 tokens`);
  assert.equal(m.strata_slots_busy, 0);
  assert.ok(ran < 4000, `${ran} tokens`);
});
await one.stop();

const short = await startServer({ modelPath: model('tiny'), name: 'connections-deadline', args: ['--header-timeout', '1'] });
await check('the header deadline closes slow-header and idle keep-alive connections', async () => {
  const slow = await connect(short.port);
  slow.on('error', () => {});
  slow.write('GET /health HTTP/1.1\r\nHo');
  const trickle = setInterval(() => slow.write('s'), 200); // bytes keep coming, headers never end
  const idle = await connect(short.port);
  idle.on('error', () => {});
  let answered = '';
  idle.on('data', (d) => { answered += d; });
  idle.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  const closed = (s) => new Promise((r) => s.on('close', () => r(Date.now())));
  const t0 = Date.now();
  const [a, b] = await Promise.all([closed(slow), closed(idle)]);
  clearInterval(trickle);
  assert.match(answered, /^HTTP\/1\.1 200 OK/);
  console.log(`     slow headers closed after ${a - t0} ms, idle keep-alive after ${b - t0} ms`);
  assert.ok(a - t0 < 3000 && b - t0 < 3000, 'both closed within the deadline (1 s) and a tick');
  await sleep(300); // the client's own pooled connection was closed at about the same time
  const m = await metrics(short);
  assert.ok(m.strata_http_connections_cut_total >= 2);
});

await short.stop();

const full = await startServer({ modelPath: model('tiny'), name: 'connections-reserve',
  args: ['--max-connections', '64', '--header-timeout', '60'] });
await check('the reserve: with the connection limit filled by idle clients, /health answers within seconds', async () => {
  const held = [];
  for (let i = 0; i < 80; i++) {
    const s = net.connect(full.port, '127.0.0.1');
    s.on('error', () => {});
    held.push(s);
  }
  await sleep(300);
  const t0 = Date.now();
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    try { status = (await fetch(`${full.base}/health`)).status; } catch { await sleep(100); }
  }
  const took = Date.now() - t0;
  console.log(`     64-connection limit filled by 80 idle clients: /health answered ${status} after ${took} ms`);
  assert.equal(status, 200);
  assert.ok(took < 4000, `${took} ms`);
  const m = await metrics(full);
  assert.ok(m.strata_http_connections_cut_total >= 1, 'the reserve closed waiting connections (deadline 60 s, cut at 1 s)');
  for (const s of held) s.destroy();
});

await finish([full]);

// Malformed and hostile requests: each gets the right status and error body, and the server
// stays healthy and keeps answering real requests.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { DIR, STRATA, check, finish, loadOpenAI, metrics, model, post, sleep, startServer, stream } from './lib.mjs';

const OpenAI = await loadOpenAI();
const KEY = 'sk-test-0123456789';
const srv = await startServer({
  modelPath: model('tiny'), name: 'hostile',
  args: ['--parallel', '2', '--ctx', '512', '--api-key', KEY, '--max-body', '65536', '--alias', 'tiny-alias'],
});
const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: KEY, maxRetries: 0 });
const auth = { authorization: `Bearer ${KEY}` };
const good = { model: 'tiny-alias', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 };

function assertError(r, status, code) {
  assert.equal(r.status, status, `status of ${r.text.slice(0, 300)}`);
  assert.ok(r.json && r.json.error, `an error body: ${r.text.slice(0, 300)}`);
  const e = r.json.error;
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, 'string');
  assert.ok('param' in e && 'code' in e, 'error has param and code');
  if (code !== undefined) assert.equal(e.code, code);
}

async function stillHealthy() {
  const h = await fetch(`${srv.base}/health`);
  assert.equal(h.status, 200);
  const r = await client.chat.completions.create(good);
  assert.equal(r.choices[0].message.role, 'assistant');
}

await check('missing API key -> 401', async () => {
  assertError(await post(srv, '/v1/chat/completions', good), 401, 'invalid_api_key');
  const bad = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create(good), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  assertError(await post(srv, '/v1/chat/completions', good, { authorization: `Basic ${KEY}` }), 401);
  assertError(await post(srv, '/v1/chat/completions', good, { authorization: `Bearer ${KEY}x` }), 401);
  // /slots shows every request's parameters: behind the key too
  assert.equal((await fetch(`${srv.base}/slots`)).status, 401);
  const sl = await fetch(`${srv.base}/slots`, { headers: auth });
  assert.equal(sl.status, 200);
  assert.equal((await sl.json()).length, 2);
  await stillHealthy();
});

await check('bad JSON -> 400', async () => {
  for (const body of ['{"model":', 'not json', '', '[1,2,3]', '"just a string"', '{"messages":[{"role":"user","content":"hi"}]}}'])
    assertError(await post(srv, '/v1/chat/completions', body, auth), 400);
  await stillHealthy();
});

await check('huge body -> 413', async () => {
  const big = JSON.stringify({ ...good, messages: [{ role: 'user', content: 'x'.repeat(2 << 20) }] });
  assertError(await post(srv, '/v1/chat/completions', big, auth), 413, 'request_too_large');
  await stillHealthy();
});

await check('deep nesting -> 400', async () => {
  const deep = '{"model":"tiny-alias","messages":[{"role":"user","content":"hi"}],"x":' + '['.repeat(5000) + ']'.repeat(5000) + '}';
  assertError(await post(srv, '/v1/chat/completions', deep, auth), 400, 'invalid_json');
  const deepObj = '{"a":'.repeat(40) + '1' + '}'.repeat(40);
  assertError(await post(srv, '/v1/completions', deepObj, auth), 400, 'invalid_json');
  await stillHealthy();
});

await check('wrong types and values -> 400 naming the parameter', async () => {
  const cases = [
    [{ ...good, messages: 'hi' }, 'messages'],
    [{ ...good, messages: [] }, 'messages'],
    [{ ...good, messages: [{ role: 1, content: 'x' }] }, 'messages'],
    [{ ...good, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages'],
    [{ ...good, temperature: 'hot' }, 'temperature'],
    [{ ...good, temperature: 7 }, 'temperature'],
    [{ ...good, max_tokens: -1 }, 'max_tokens'],
    [{ ...good, max_tokens: '10' }, 'max_tokens'],
    [{ ...good, stream: 'yes' }, 'stream'],
    [{ ...good, stop: 5 }, 'stop'],
    [{ ...good, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    [{ ...good, n: 99 }, 'n'],
    [{ ...good, model: 42 }, 'model'],
    [{ ...good, top_p: 1.5 }, 'top_p'],
    [{ ...good, seed: 'x' }, 'seed'],
    [{ ...good, tools: [{ type: 'function', function: { parameters: {} } }] }, 'tools'],
    [{ ...good, logprobs: 'yes' }, 'logprobs'],
    [{ ...good, response_format: { type: 'xml' } }, 'response_format'],
    [{ ...good, grammar: 'root ::= undefined-rule' }, 'grammar'],
    [{ ...good, logit_bias: { x: 1 } }, 'logit_bias'],
  ];
  for (const [body, param] of cases) {
    const r = await post(srv, '/v1/chat/completions', body, auth);
    assertError(r, 400);
    assert.equal(r.json.error.param, param, `param of ${JSON.stringify(body).slice(0, 120)}`);
  }
  // what is not used is accepted: empty tools, logprobs false, text format
  const ok = await post(srv, '/v1/chat/completions', { ...good, tools: [], logprobs: false, response_format: { type: 'text' } }, auth);
  assert.equal(ok.status, 200, ok.text);
  assertError(await post(srv, '/v1/completions', { model: 'tiny-alias', prompt: 7 }, auth), 400);
  assertError(await post(srv, '/v1/completions', { model: 'tiny-alias' }, auth), 400);
  await assert.rejects(client.chat.completions.create({ ...good, temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  await stillHealthy();
});

await check('unknown model -> 404 model_not_found', async () => {
  await assert.rejects(client.chat.completions.create({ ...good, model: 'gpt-5' }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === 'model_not_found');
  await stillHealthy();
});

await check('prompt longer than the context -> 400 context_length_exceeded', async () => {
  const long = 'lorem ipsum dolor sit amet '.repeat(200);
  const r = await post(srv, '/v1/chat/completions', { ...good, messages: [{ role: 'user', content: long }] }, auth);
  assertError(r, 400, 'context_length_exceeded');
  assert.match(r.json.error.message, /512/);
  await assert.rejects(client.completions.create({ model: 'tiny-alias', prompt: long, stream: true }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  await stillHealthy();
});

await check('unknown routes and methods', async () => {
  assertError(await post(srv, '/v1/embeddings', { input: 'x' }, auth), 400); /* a generative model: no pooling */
  const g = await fetch(`${srv.base}/v1/chat/completions`, { headers: auth });
  assert.equal(g.status, 405);
  await stillHealthy();
});

await check('garbage on the socket and a half-sent request do not hurt', async () => {
  const junk = (payload) => new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1', () => { s.write(payload); setTimeout(() => { s.destroy(); resolve(); }, 100); });
    s.on('error', () => resolve());
  });
  await junk(Buffer.from([0, 1, 2, 255, 254, 13, 10, 13, 10]));
  await junk('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"model":');
  await junk('GET /health HTTP/1.1\r\n' + 'X-Long: ' + 'a'.repeat(100000) + '\r\n\r\n');
  await stillHealthy();
});

await check('health needs no key; metrics and models do', async () => {
  assert.equal((await fetch(`${srv.base}/health`)).status, 200);
  assert.equal((await fetch(`${srv.base}/metrics`)).status, 401);
  assert.equal((await fetch(`${srv.base}/metrics`, { headers: auth })).status, 200);
  assert.equal((await fetch(`${srv.base}/v1/models`)).status, 401);
  const list = await client.models.list();
  assert.equal(list.data[0].id, 'tiny-alias');
});

await check('--config file: options from JSON, later command-line options win, bad keys refused', async () => {
  const cfg = path.join(DIR, 'hostile-config.json');
  fs.writeFileSync(cfg, JSON.stringify({ model: model('tiny'), alias: 'from-file', 'api-key': 'k1', parallel: 3, ctx: 256 }));
  const s2 = await startServer({ modelPath: model('tiny'), name: 'hostile-config', args: ['--config', cfg, '--alias', 'from-cli'] });
  try {
    const c2 = new OpenAI({ baseURL: `${s2.base}/v1`, apiKey: 'k1', maxRetries: 0 });
    assert.equal((await c2.models.list()).data[0].id, 'from-cli');
    const h = await (await fetch(`${s2.base}/health`)).json();
    assert.equal(h.slots_total, 3);
    const r = await post(s2, '/v1/completions', { prompt: 'x'.repeat(400) }, { authorization: 'Bearer k1' });
    assertError(r, 400, 'context_length_exceeded');
    assert.equal((await post(s2, '/v1/completions', { prompt: 'x' })).status, 401);
  } finally {
    await s2.stop();
  }
  for (const bad of [{ modle: 'x' }, { parallel: 'many' }, { port: 70000 }, { host: ['a'] }]) {
    fs.writeFileSync(cfg, JSON.stringify(bad));
    const p = spawnSync(STRATA, ['serve', '--config', cfg], { encoding: 'utf8', timeout: 10000 });
    assert.equal(p.status, 2, `${JSON.stringify(bad)}: ${p.stderr}`);
    assert.match(p.stderr, /strata serve: /);
  }
});

await check('a full queue -> 429 rate_limit_exceeded; the queued request runs after', async () => {
  const s3 = await startServer({ modelPath: model('tiny'), name: 'hostile-queue', args: ['--parallel', '1', '--queue', '1'] });
  try {
    const body = { prompt: 'x', max_tokens: 3000, ignore_eos: true, stream: true };
    const ctlA = new AbortController();
    let firstA = null;
    const gotFirst = new Promise((resolve) => { firstA = resolve; });
    const a = stream(s3, '/v1/completions', body, () => firstA(), ctlA.signal).catch((e) => e);
    await gotFirst;
    const b = stream(s3, '/v1/completions', { ...body, max_tokens: 4 });
    for (let i = 0; i < 100 && (await metrics(s3)).strata_queue_length !== 1; i++) await sleep(10);
    assert.equal((await metrics(s3)).strata_queue_length, 1);
    const c = await post(s3, '/v1/completions', { ...body, stream: false });
    assertError(c, 429, 'rate_limit_exceeded');
    ctlA.abort();
    assert.equal((await a).name, 'AbortError');
    const rb = await b;
    assert.equal(rb.status, 200);
    assert.equal(rb.events[rb.events.length - 1], '[DONE]');
    assert.equal(JSON.parse(rb.events[rb.events.length - 2]).choices[0].finish_reason, 'length');
  } finally {
    await s3.stop();
  }
});

await finish([srv]);

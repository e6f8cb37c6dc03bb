// Supervision of the engine child: SIGKILL and SIGSEGV mid-stream, and a device op that fails
// (simulated device, STRATA_SIM fail_op). In each case every in-flight stream ends with a
// `data: {"error":...}` event and then `data: [DONE]`, new requests get 503 with Retry-After
// while the engine restarts, and the next request succeeds.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, loadOpenAI, metrics, model, post, sleep, startServer, stream, waitHealthy } from './lib.mjs';

const OpenAI = await loadOpenAI();
const reports = path.join(DIR, 'reports-supervision');
fs.rmSync(reports, { recursive: true, force: true });
fs.mkdirSync(reports, { recursive: true });

const long = { model: 'demo', messages: [{ role: 'user', content: 'Write a long story.' }], max_tokens: 3000,
  ignore_eos: true, stream: true };

async function enginePid(srv) {
  const h = await (await fetch(`${srv.base}/health`)).json();
  assert.equal(h.status, 'ok');
  assert.ok(h.engine_pid > 0);
  const m = await metrics(srv);
  assert.equal(m.strata_engine_pid, h.engine_pid, '/metrics and /health name the same engine pid');
  return h.engine_pid;
}

// A raw stream that calls `onFirst` after its first content chunk; resolves to its events.
function rawStream(srv, body, onFirst) {
  let fired = false;
  return stream(srv, '/v1/chat/completions', body, async (data) => {
    if (!fired && data !== '[DONE]' && !JSON.parse(data).error) {
      fired = true;
      if (onFirst) await onFirst();
    }
  });
}

// The end of a stream cut by an engine death: content chunks, one error event, [DONE].
function assertErrorEnd(events, what) {
  assert.ok(events.length >= 3, `${what}: too few events ${JSON.stringify(events).slice(0, 300)}`);
  assert.equal(events[events.length - 1], '[DONE]', `${what}: [DONE] last`);
  const err = JSON.parse(events[events.length - 2]);
  assert.ok(err.error, `${what}: an error event before [DONE]: ${events[events.length - 2]}`);
  assert.equal(typeof err.error.message, 'string');
  assert.equal(typeof err.error.type, 'string');
  for (const e of events.slice(0, -2)) {
    const c = JSON.parse(e);
    assert.equal(c.error, undefined);
    assert.equal(c.choices[0].finish_reason, null, `${what}: no finish_reason before the error`);
  }
  return err.error;
}

// Right after a death: 503 with Retry-After while restarting, then health and a good answer.
async function assertRestart(srv, oldPid, restartsBefore, modelId) {
  const r = await post(srv, '/v1/chat/completions', { model: modelId, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(r.status, 503, `during the restart: ${r.text.slice(0, 300)}`);
  assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After on 503');
  // engine_died when the request raced the front's notice of the death
  assert.ok(['engine_unavailable', 'engine_died'].includes(r.json.error.code), r.json.error.code);
  const h = await fetch(`${srv.base}/health`);
  assert.equal(h.status, 503);
  await waitHealthy(srv, 30000);
  const pid = await enginePid(srv);
  assert.notEqual(pid, oldPid, 'a new engine process');
  const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const ok = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, ignore_eos: true });
  assert.equal(ok.choices[0].finish_reason, 'length');
  assert.equal(ok.usage.completion_tokens, 3);
  const m = await metrics(srv);
  assert.equal(m.strata_engine_restarts_total, restartsBefore + 1);
  assert.equal(m.strata_engine_up, 1);
}

const cpu = await startServer({ modelPath: model('demo'), name: 'supervision',
  args: ['--parallel', '2', '--restart-delay', '2', '--report-dir', reports] });
const client = new OpenAI({ baseURL: `${cpu.base}/v1`, apiKey: 'unused', maxRetries: 0 });

await check('SIGKILL of the engine mid-stream: error event, [DONE], 503 while restarting, then served', async () => {
  const pid = await enginePid(cpu);
  const res = await rawStream(cpu, long, () => process.kill(pid, 'SIGKILL'));
  assert.equal(res.status, 200);
  const err = assertErrorEnd(res.events, 'SIGKILL');
  assert.match(err.message, /killed by signal KILL/);
  assert.equal(err.code, 'engine_died');
  await assertRestart(cpu, pid, 0, 'demo');
});

await check('SIGSEGV of the engine: crash report named in every in-flight stream\'s error event', async () => {
  const pid = await enginePid(cpu);
  let sdkError = null, sdkChunks = 0;
  // two streams in flight: one read by the SDK, one raw
  const sdk = (async () => {
    const s = await client.chat.completions.create(long);
    try { for await (const c of s) { void c; sdkChunks++; } } catch (e) { sdkError = e; }
  })();
  let started = 0;
  const raw = rawStream(cpu, long, async () => {
    started = 1;
    for (let i = 0; i < 200 && sdkChunks === 0; i++) await sleep(10);
    process.kill(pid, 'SIGSEGV');
  });
  const res = await raw;
  await sdk;
  assert.equal(started, 1);
  const err = assertErrorEnd(res.events, 'SIGSEGV');
  const file = path.join(reports, `strata-crash-${pid}.txt`);
  assert.match(err.message, /killed by signal SEGV/);
  assert.ok(err.message.includes(file), `the error names the report ${file}: ${err.message}`);
  assert.ok(fs.existsSync(file), `${file} exists`);
  const rep = fs.readFileSync(file, 'utf8');
  assert.match(rep, /^strata crash report\nsignal: SIGSEGV \(11\)/);
  assert.match(rep, /\nstage: step \d+: forward of \d+ tokens \(\d+ decode, \d+ prefill\) on Host CPU[^;]*; slots \d \(request \d+\)/);
  assert.match(rep, /\nbacktrace:\n/);
  assert.match(rep, /\nlast log lines:\n/);
  assert.ok(sdkChunks > 0, 'the SDK stream was running');
  assert.ok(sdkError instanceof OpenAI.APIError, `the SDK raised APIError: ${sdkError}`);
  assert.ok(String(sdkError.message).includes(file), `SDK error names the report: ${sdkError.message}`);
  await assertRestart(cpu, pid, 1, 'demo');
});

await check('the crash left the server whole: health, metrics, a streamed request', async () => {
  const chunks = [];
  const s = await client.chat.completions.create({ ...long, max_tokens: 5 });
  for await (const c of s) chunks.push(c);
  assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, 'length');
  const m = await metrics(cpu);
  assert.equal(m.strata_slots_busy, 0);
  assert.equal(m.strata_engine_restarts_total, 2);
  assert.match(cpu.log, /ERROR the engine was killed by signal SEGV \(11\) during step/);
});
await cpu.stop();

// A device op fails: op counts restart with every device open, so the Kth op falls inside the
// long request (~31 ops per forward of the tiny model) and never inside the short ones.
const sim = await startServer({ modelPath: model('tiny'), name: 'supervision-sim',
  args: ['--backend', 'sim', '--parallel', '2', '--restart-delay', '2', '--report-dir', reports],
  env: { STRATA_SIM: 'devices=1,mem=1GiB,fail_op=3000' } });

await check('a failed device op (sim fail_op): error event naming the op, [DONE], restart, served', async () => {
  const pid = await enginePid(sim);
  const res = await rawStream(sim, { ...long, model: 'tiny' });
  assert.equal(res.status, 200);
  const err = assertErrorEnd(res.events, 'fail_op');
  assert.match(err.message, /injected failure: op #3000/);
  assert.equal(err.code, 'engine_error');
  await assertRestart(sim, pid, 0, 'tiny');
  assert.match(sim.log, /exits \(code 74\) to be restarted/);
});

await finish([sim]);

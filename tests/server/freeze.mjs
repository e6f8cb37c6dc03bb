// A frozen engine (SIGSTOP): the front watches the engine's heartbeats with the deadline of
// --stall-timeout. On a miss it writes a stall report, kills and restarts the engine, and ends
// every affected stream with an error event; a request sent while the engine was frozen ends
// too; /metrics does not call a frozen engine up.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, loadOpenAI, metrics, model, post, sleep, startServer, stream, waitHealthy } from './lib.mjs';

const OpenAI = await loadOpenAI();
const reports = path.join(DIR, 'reports-freeze');
fs.rmSync(reports, { recursive: true, force: true });
fs.mkdirSync(reports, { recursive: true });

const srv = await startServer({ modelPath: model('tiny'), name: 'freeze',
  args: ['--parallel', '2', '--stall-timeout', '2', '--restart-delay', '0.5', '--report-dir', reports] });
const long = { model: 'tiny', prompt: 'Once', max_tokens: 100000, ignore_eos: true, stream: true };

await check('SIGSTOP of the engine: error event, stall report, restart, served', async () => {
  const pid = (await (await fetch(`${srv.base}/health`)).json()).engine_pid;
  assert.ok(pid > 0);
  let stoppedAt = 0;
  const t0 = Date.now();
  const res = await stream(srv, '/v1/completions', long, async (data, i) => {
    if (i === 2) { process.kill(pid, 'SIGSTOP'); stoppedAt = Date.now(); }
  });
  assert.ok(stoppedAt > 0, 'the stream was running when the engine was stopped');
  const took = Date.now() - stoppedAt;
  console.log(`     stream ended ${took} ms after SIGSTOP (${Date.now() - t0} ms in all)`);
  assert.ok(took < 6000, `the frozen engine was noticed within the deadline (${took} ms, limit 2 s)`);
  const ev = res.events;
  assert.equal(ev[ev.length - 1], '[DONE]');
  const err = JSON.parse(ev[ev.length - 2]).error;
  assert.ok(err, `an error event before [DONE]: ${ev[ev.length - 2]}`);
  assert.match(err.message, /stopped answering \(no heartbeat for [\d.]+ s, limit 2 s; process state T \(stopped\)\) and was killed by the server/);
  const file = path.join(reports, `strata-stall-${pid}.txt`);
  assert.ok(err.message.includes(file), `names the report ${file}: ${err.message}`);
  const rep = fs.readFileSync(file, 'utf8');
  assert.match(rep, /^strata stall report\nwritten by: the server/);
  assert.match(rep, new RegExp(`\\nengine pid: ${pid}\\n`));
  await waitHealthy(srv, 20000);
  const h = await (await fetch(`${srv.base}/health`)).json();
  assert.notEqual(h.engine_pid, pid, 'a new engine');
  const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const ok = await client.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 4, ignore_eos: true });
  assert.equal(ok.usage.completion_tokens, 4);
  assert.equal((await metrics(srv)).strata_engine_restarts_total, 1);
});

await check('a request sent to a frozen engine ends with an error; /metrics says engine_up 0', async () => {
  const pid = (await (await fetch(`${srv.base}/health`)).json()).engine_pid;
  process.kill(pid, 'SIGSTOP');
  const t0 = Date.now();
  const r = post(srv, '/v1/completions', { model: 'tiny', prompt: 'Once', max_tokens: 8 });
  await sleep(1500);
  const m = await metrics(srv, 0);
  assert.equal(m.strata_engine_up, 0, 'a frozen engine is not up');
  const res = await r;
  const took = Date.now() - t0;
  assert.ok(took < 6000, `answered in ${took} ms`);
  assert.equal(res.status, 503, res.text);
  assert.match(res.json.error.message, /stopped answering/);
  assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After');
  await waitHealthy(srv, 20000);
});

await check('SIGTERM of the server with a stopped engine ends it promptly', async () => {
  const pid = (await (await fetch(`${srv.base}/health`)).json()).engine_pid;
  process.kill(pid, 'SIGSTOP');
  const t0 = Date.now();
  const st = await srv.stop();
  const took = Date.now() - t0;
  assert.equal(st.code, 0, JSON.stringify(st));
  assert.ok(took < 2000, `exited ${took} ms after SIGTERM`);
  let alive = true;
  try { process.kill(pid, 0); } catch { alive = false; }
  assert.equal(alive, false, 'the engine is gone too');
});

await finish([srv]);

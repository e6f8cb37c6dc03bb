// Stall: a device op that hangs (simulated device, STRATA_SIM hang_op) with --stall-timeout 2.
// The engine's watchdog writes a stall report and ends the engine; the stream in flight ends
// with an error event naming the report, then [DONE]; the front restarts the engine and serves.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, loadOpenAI, metrics, model, post, startServer, stream, waitHealthy } from './lib.mjs';

const OpenAI = await loadOpenAI();
const reports = path.join(DIR, 'reports-stall');
fs.rmSync(reports, { recursive: true, force: true });
fs.mkdirSync(reports, { recursive: true });

// op 2000 hangs for 60 s: inside the long request (~31 ops per forward), never in the short one
const srv = await startServer({ modelPath: model('tiny'), name: 'stall',
  args: ['--backend', 'sim', '--parallel', '2', '--stall-timeout', '2', '--restart-delay', '3', '--report-dir', reports],
  env: { STRATA_SIM: 'devices=1,mem=1GiB,hang_op=2000,hang_ms=60000' } });

await check('a hung op: stall report, error event naming it, [DONE], restart, served', async () => {
  const h = await (await fetch(`${srv.base}/health`)).json();
  const pid = h.engine_pid;
  const t0 = Date.now();
  const res = await stream(srv, '/v1/completions', { model: 'tiny', prompt: 'Once', max_tokens: 3000, ignore_eos: true, stream: true });
  const took = Date.now() - t0;
  assert.equal(res.status, 200);
  const ev = res.events;
  assert.equal(ev[ev.length - 1], '[DONE]');
  const err = JSON.parse(ev[ev.length - 2]).error;
  assert.ok(err, `an error event: ${ev[ev.length - 2]}`);
  assert.ok(ev.length >= 3, 'tokens came before the stall');
  const file = path.join(reports, `strata-stall-${pid}.txt`);
  assert.match(err.message, /stalled \(no progress for 2 s\) and was stopped by its watchdog/);
  assert.ok(err.message.includes(file), `names ${file}: ${err.message}`);
  assert.ok(took < 20000, `the stall was noticed in ${took} ms (timeout 2 s, the op hangs 60 s)`);
  const rep = fs.readFileSync(file, 'utf8');
  assert.match(rep, /^strata stall report\n/);
  assert.match(rep, /\nstage: step \d+: forward of 1 tokens \(1 decode, 0 prefill\) on Simulated GPU 0; slots 0 \(request 1\)\n/);
  assert.match(rep, /\nno progress for: [\d.]+ s \(limit 2\.0 s\)/);
  assert.match(rep, /\nthreads:\n/);
  assert.match(rep, /\ndevices:\n  Simulated GPU 0/);
  assert.match(rep, /page faults: \d+ major/);
  // while restarting: 503 with Retry-After
  const r = await post(srv, '/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 2 });
  assert.equal(r.status, 503, r.text);
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.match(r.json.error.message, /stalled/);
  await waitHealthy(srv, 30000);
  const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const ok = await client.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 4, ignore_eos: true });
  assert.equal(ok.usage.completion_tokens, 4);
  const m = await metrics(srv);
  assert.equal(m.strata_engine_restarts_total, 1);
  assert.notEqual(m.strata_engine_pid, pid);
});

await finish([srv]);

// Engines that can never start: no endless restart loop. A start-up failure that will repeat
// ends the server before it serves (bad model contents, a memory plan that does not fit); once
// it serves, the restarts stop after --restart-limit identical failures and requests get 503
// with the engine's message. The back-off grows; SIGTERM ends the server at once at any point.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, freePort, model, patchedModel, post, sleep, startServer, runToExit } from './lib.mjs';

const tmp = path.join(DIR, 'restarts');
fs.rmSync(tmp, { recursive: true, force: true });
fs.mkdirSync(tmp, { recursive: true });
const serve = async (m, extra = []) => ['serve', '-m', m, '--port', String(await freePort()), '--restart-delay', '0.2', ...extra];

await check('head_count 0: the server exits 1 before listening, with the reason', async () => {
  const bad = patchedModel(model('tiny'), path.join(tmp, 'heads0.gguf'), { u32: { 'llama.attention.head_count': 0 } });
  const r = await runToExit(await serve(bad));
  assert.equal(r.code, 1, r.log);
  assert.match(r.log, /head_count/);
  assert.doesNotMatch(r.log, /listening on/);
  assert.ok(r.ms < 5000, `${r.ms} ms`);
});

await check('a missing tensor: the server exits 1 before listening, naming it', async () => {
  const bad = patchedModel(model('tiny'), path.join(tmp, 'missing.gguf'), { rename: { 'blk.1.ffn_up.weight': 'blk.1.ffn_UP.weight' } });
  const r = await runToExit(await serve(bad));
  assert.equal(r.code, 1, r.log);
  assert.match(r.log, /blk\.1\.ffn_up\.weight/);
  assert.doesNotMatch(r.log, /listening on/);
});

await check('a memory plan that does not fit: the server exits 1 with the engine\'s message, no restart loop', async () => {
  const r = await runToExit(await serve(model('tiny'), ['--backend', 'sim']), { env: { STRATA_SIM: 'devices=1,mem=64KiB' } });
  assert.equal(r.code, 1, r.log);
  assert.match(r.log, /cannot serve .*the engine could not start \(exit code 78\)/);
  assert.equal((r.log.match(/engine: model /g) || []).length, 0);
  assert.equal((r.log.match(/restarting it/g) || []).length, 0, 'not restarted');
  assert.ok(r.ms < 10000, `${r.ms} ms`);
});

await check('the model breaks while serving: 3 identical start failures, then 503 with the message', async () => {
  const file = path.join(tmp, 'live.gguf');
  fs.copyFileSync(model('tiny'), file);
  const srv = await startServer({ modelPath: file, name: 'restarts-live', args: ['--restart-delay', '0.3', '--restart-limit', '3'] });
  try {
    const pid = (await (await fetch(`${srv.base}/health`)).json()).engine_pid;
    // the front keeps its mapping of the old file; new engines read the broken one
    patchedModel(model('tiny'), `${file}.new`, { u32: { 'llama.attention.head_count': 0 } });
    fs.renameSync(`${file}.new`, file);
    const t0 = Date.now();
    process.kill(pid, 'SIGKILL');
    const ra = [];
    let h;
    for (;;) {
      const r = await post(srv, '/v1/completions', { prompt: 'x', max_tokens: 1 });
      assert.equal(r.status, 503, r.text);
      if (r.headers.get('retry-after')) ra.push(Number(r.headers.get('retry-after')));
      if (/not restarting it/.test(r.json.error.message)) { h = r; break; }
      assert.ok(Date.now() - t0 < 15000, 'the restarts stopped');
      await sleep(50);
    }
    const took = Date.now() - t0;
    console.log(`     restarts stopped ${took} ms after the death; Retry-After seen: ${[...new Set(ra)].join(',')}`);
    assert.ok(took >= 300 + 600 + 1200 - 100, `back-off 0.3 + 0.6 + 1.2 s grew (${took} ms)`);
    assert.match(h.json.error.message, /failed to start 3 times in a row the same way.*head_count/);
    assert.equal(h.headers.get('retry-after'), null, 'no Retry-After when the engine will not come back');
    const health = await fetch(`${srv.base}/health`);
    assert.equal(health.status, 503);
    await sleep(1500);
    assert.equal((srv.log.match(/engine: model /g) || []).length, 1, 'no engine got ready after the break');
    assert.equal((srv.log.match(/ERROR the engine could not start/g) || []).length, 3, 'three failed starts, no more');
    const t1 = Date.now();
    const st = await srv.stop();
    assert.equal(st.code, 0);
    assert.ok(Date.now() - t1 < 1500, `SIGTERM took ${Date.now() - t1} ms`);
  } finally { await srv.stop(); }
});

await check('SIGTERM during a long back-off ends the server at once', async () => {
  const srv = await startServer({ modelPath: model('tiny'), name: 'restarts-backoff', args: ['--restart-delay', '60'] });
  const pid = (await (await fetch(`${srv.base}/health`)).json()).engine_pid;
  process.kill(pid, 'SIGKILL');
  await sleep(300);
  const r = await post(srv, '/v1/completions', { prompt: 'x', max_tokens: 1 });
  assert.equal(r.status, 503);
  const ra = Number(r.headers.get('retry-after'));
  assert.ok(ra >= 59 && ra <= 62, `Retry-After follows the back-off: ${ra}`);
  const t0 = Date.now();
  const st = await srv.stop();
  assert.equal(st.code, 0, JSON.stringify(st));
  assert.ok(Date.now() - t0 < 1500, `exited ${Date.now() - t0} ms after SIGTERM`);
});

await check('the report directory: a warning when it cannot be written, a refusal when too long', async () => {
  const srv = await startServer({ modelPath: model('tiny'), name: 'restarts-reportdir', args: ['--report-dir', path.join(tmp, 'no', 'such')] });
  try {
    assert.match(srv.log, /WARNING: reports cannot be written to .*no\/such \(No such file or directory\)/);
  } finally { await srv.stop(); }
  const r = await runToExit(await serve(model('tiny'), ['--report-dir', `/tmp/${'d'.repeat(500)}`]));
  assert.equal(r.code, 1);
  assert.match(r.log, /--report-dir is 505 bytes long; at most 400/);
});

await finish([]);

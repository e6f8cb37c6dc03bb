// The layer split in the server: `serve --backend sim` with two simulated devices splits the
// model over both (/metrics shows each device's layers and bytes, the request log the time per
// device); sim1 then loses itself mid-run: the request in flight ends with an error naming it,
// the engine plans again on sim0 with a warning, and the next requests are served there with
// the tokens the two devices gave.
import assert from 'node:assert/strict';
import { check, finish, model, post, startServer } from './lib.mjs';

const body = { prompt: 'Once upon a time', max_tokens: 24, temperature: 0 };
const srv = await startServer({
  modelPath: model('tiny'), name: 'split', args: ['--backend', 'sim', '--parallel', '1', '--ctx', '256'],
  env: { STRATA_SIM: 'devices=2,mem=64MiB,dev1.lose_after=1500' },
});
const text = async () => (await (await fetch(`${srv.base}/metrics`)).text());
let first = null;

await check('the model is split over sim0 and sim1', async () => {
  const r = await post(srv, '/v1/completions', body);
  assert.equal(r.status, 200, r.text);
  first = r.json.choices[0].text;
  const m = await text();
  assert.match(m, /strata_device_layers\{device="sim0",layer_first="0"\} 1/);
  assert.match(m, /strata_device_layers\{device="sim1",layer_first="1"\} 1/);
  assert.match(m, /strata_device_bytes\{device="sim1"\} [1-9]/);
  assert.match(m, /strata_plan_device_time_share\{device="1"\} 0\.[0-9]+/);
  assert.match(srv.log, /layer split over 2 devices/);
  assert.match(srv.log, /time per device: sim0 [0-9.]+ ms, sim1 [0-9.]+ ms/);
});

await check('sim1 lost: the request in flight fails naming it; the engine goes on alone on sim0', async () => {
  let failed = null;
  for (let i = 0; i < 20 && !failed; i++) {
    const r = await post(srv, '/v1/completions', body);
    if (r.status !== 200) failed = r;
    else assert.equal(r.json.choices[0].text, first, 'the split gives the same tokens every time');
  }
  assert.ok(failed, 'sim1 never got lost');
  assert.match(failed.text, /sim1/);
  assert.match(failed.text, /lost/);
  const r = await post(srv, '/v1/completions', body);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].text, first, 'sim0 alone gives the split\'s tokens');
  assert.match(srv.log, /WARNING: lost sim1 \(layers 1-1\); planning the model again/);
  assert.match(srv.log, /goes on with the new plan/);
  const m = await text();
  assert.match(m, /strata_device_layers\{device="sim0",layer_first="0"\} 2/);
  assert.doesNotMatch(m, /strata_device_layers\{device="sim1"/);
});

await finish([srv]);

// Concurrency ladder: 1, 2, 4 and 8 concurrent streamed requests with ~2K-token prompts, three
// waves each. Every request succeeds, greedy outputs equal the one-at-a-time outputs, and the
// engine's statistics show requests sharing forward steps.
import assert from 'node:assert/strict';
import { check, finish, loadOpenAI, metrics, model, startServer } from './lib.mjs';

const OpenAI = await loadOpenAI();
const SLOTS = 8;
const srv = await startServer({ modelPath: model('tiny'), args: ['--parallel', String(SLOTS), '--ctx', '4096'], name: 'concurrency' });
const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
const GEN = 24;

// distinct prompts of about 2K tokens (pseudo-random words; the first words differ)
function words(seed, n) {
  let x = seed * 2654435761 >>> 0;
  const syl = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'to', 'vi', 'the', 'and', 'in', 'on', 'er', 'ou', 'is', 'at'];
  const out = [];
  for (let i = 0; i < n; i++) {
    let w = '';
    for (let k = 0; k < 1 + (x % 3); k++) {
      x = (x * 1103515245 + 12345) >>> 0;
      w += syl[(x >>> 16) % syl.length];
    }
    out.push(w);
  }
  return out.join(' ');
}
const prompts = Array.from({ length: SLOTS }, (_, i) => `Story ${i}: ${words(i + 1, 700)}`);

async function run(i) {
  const s = await client.chat.completions.create({
    model: 'tiny', stream: true, temperature: 0, max_tokens: GEN, ignore_eos: true,
    stream_options: { include_usage: true }, messages: [{ role: 'user', content: prompts[i] }],
  });
  let text = '', usage = null, fin = null;
  for await (const c of s) {
    if (c.usage) usage = c.usage;
    if (c.choices.length) {
      text += c.choices[0].delta.content || '';
      if (c.choices[0].finish_reason) fin = c.choices[0].finish_reason;
    }
  }
  return { text, usage, fin };
}

const ref = [];
await check('one at a time: reference outputs of ~2K-token prompts', async () => {
  for (let i = 0; i < SLOTS; i++) {
    const r = await run(i);
    assert.equal(r.fin, 'length');
    assert.equal(r.usage.completion_tokens, GEN);
    assert.ok(r.usage.prompt_tokens >= 1500 && r.usage.prompt_tokens <= 3000, `prompt ${i}: ${r.usage.prompt_tokens} tokens`);
    ref.push(r.text);
  }
  console.log(`     prompt tokens: ${prompts.length} prompts, first ${(await run(0)).usage.prompt_tokens}`);
  assert.equal(new Set(ref).size > 1, true, 'different prompts give different outputs');
});

for (const conc of [1, 2, 4, 8]) {
  await check(`${conc} concurrent streams, three waves: all succeed, outputs equal one-at-a-time`, async () => {
    for (let wave = 0; wave < 3; wave++) {
      const idx = Array.from({ length: conc }, (_, k) => (wave * 3 + k) % SLOTS);
      const t0 = Date.now();
      const res = await Promise.all(idx.map((i) => run(i)));
      res.forEach((r, k) => {
        assert.equal(r.fin, 'length', `wave ${wave} request ${k}`);
        assert.equal(r.usage.completion_tokens, GEN);
        assert.equal(r.text, ref[idx[k]], `wave ${wave}: output of prompt ${idx[k]} differs from the one-at-a-time output`);
      });
      console.log(`     wave ${wave}: prompts ${idx.join(',')} in ${Date.now() - t0} ms`);
    }
  });
}

await check('engine statistics: requests shared forward steps (max_slots_in_step > 1)', async () => {
  const m = await metrics(srv);
  console.log(`     max_slots_in_step ${m.strata_engine_max_slots_in_step}, steps ${m.strata_engine_steps_total}, ` +
    `prefill ${m.strata_engine_prefill_tokens_total}, decode ${m.strata_engine_decode_tokens_total}, reused ${m.strata_engine_reused_tokens_total}`);
  assert.ok(m.strata_engine_max_slots_in_step > 1);
  assert.ok(m.strata_engine_max_slots_in_step <= SLOTS);
  assert.equal(m.strata_slots_busy, 0);
  assert.equal(m.strata_engine_restarts_total, 0);
  // waves repeat prompts: the prefix cache served some of them
  assert.ok(m.strata_engine_reused_tokens_total > 1000);
});

await finish([srv]);

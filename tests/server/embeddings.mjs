// /v1/embeddings on models with a pooling type (mean, cls, last: the tiny test model with
// <arch>.pooling_type added): each input's vector against llama.cpp's pooled embedding of the
// same tokens (llama-ref embed, normalized here) when the reference is built; and always:
// unit length, cls equal to the first token alone, the input forms (string, ids, several,
// base64) agreeing, several inputs at once equal to one at a time, usage, and the refusals.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, model, modelWithKeys, post, startServer } from './lib.mjs';

const REF = process.env.STRATA_LLAMA_REF || '';
const texts = ['Once upon a time', 'The cat sat on the mat.', 'x'];
const unit = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
const maxDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

function reference(modelPath, tokens) {
  const out = path.join(DIR, 'embd-ref.f32');
  assert.ok(fs.existsSync(REF), `${REF} is configured but not built (build the llama-ref target)`);
  const r = spawnSync(REF, ['embed', '-m', modelPath, '--tokens', tokens.join(','), '--out', out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const b = fs.readFileSync(out);
  return unit(Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(4 * i)));
}

const servers = [];
for (const [pooling, name] of [[1, 'mean'], [2, 'cls'], [3, 'last']]) {
  const file = modelWithKeys(model('tiny'), path.join(DIR, `tiny-embd-${name}.gguf`), { 'llama.pooling_type': pooling });
  const srv = await startServer({ modelPath: file, name: `embeddings-${name}`, args: ['-np', '4'] });
  servers.push(srv);
  await check(`${name} pooling: unit vectors, one per input, usage; against llama.cpp's pooled embedding`, async () => {
    const r = await post(srv, '/v1/embeddings', { input: texts, model: 'tiny' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.object, 'list');
    assert.equal(r.json.data.length, texts.length);
    let tokens = 0;
    for (const [i, d] of r.json.data.entries()) {
      assert.equal(d.index, i);
      assert.equal(d.object, 'embedding');
      assert.ok(Math.abs(Math.hypot(...d.embedding) - 1) < 1e-5, 'unit length');
      const t = (await post(srv, '/tokenize', { content: texts[i], add_special: true })).json.tokens;
      tokens += t.length;
      if (REF) {
        const ref = reference(file, t);
        assert.equal(ref.length, d.embedding.length);
        const diff = maxDiff(d.embedding, ref), cos = d.embedding.reduce((a, x, k) => a + x * ref[k], 0);
        console.log(`     ${name} '${texts[i]}' (${t.length} tokens): max |strata - llama.cpp| = ${diff.toExponential(2)}, ` +
          `cosine ${cos.toFixed(7)}`);
        // components are ~0.1; another pooling, or one token off, differs by ~1e-1
        assert.ok(diff < 1e-3 && cos > 0.99999, `${diff} ${cos}`);
      }
    }
    if (!REF) console.log('     SKIP the comparison with llama.cpp: llama-ref is not built (ci/fetch-llama-ref.sh)');
    assert.equal(r.json.usage.prompt_tokens, tokens);
    assert.equal(r.json.usage.total_tokens, tokens);
  });
  await check(`${name} pooling: the input forms agree (string, ids, arrays of both, base64), together as alone`, async () => {
    const t = (await post(srv, '/tokenize', { content: texts[0], add_special: true })).json.tokens;
    const a = (await post(srv, '/v1/embeddings', { input: texts[0] })).json.data[0].embedding;
    const b = (await post(srv, '/v1/embeddings', { input: t })).json.data[0].embedding;
    const many = (await post(srv, '/v1/embeddings', { input: [t, t.slice(0, 2), texts[0], texts[1], texts[2], t, t, t] })).json.data;
    assert.equal(many.length, 8);
    assert.ok(maxDiff(a, b) < 1e-6);
    for (const k of [0, 2, 5, 6, 7]) assert.ok(maxDiff(many[k].embedding, a) < 1e-5, `input ${k}`);
    const alone = (await post(srv, '/v1/embeddings', { input: texts[1] })).json.data[0].embedding;
    assert.ok(maxDiff(many[3].embedding, alone) < 1e-5);
    const b64 = (await post(srv, '/v1/embeddings', { input: texts[0], encoding_format: 'base64' })).json.data[0].embedding;
    const raw = Buffer.from(b64, 'base64');
    assert.equal(raw.length, 4 * a.length);
    assert.ok(maxDiff(Array.from({ length: a.length }, (_, i) => raw.readFloatLE(4 * i)), a) < 1e-6);
    // causal attention: the first token's state is the same alone or followed by others
    const first = (await post(srv, '/v1/embeddings', { input: t.slice(0, 1) })).json.data[0].embedding;
    if (name === 'cls') assert.ok(maxDiff(a, first) < 1e-5, 'cls is the first token');
    else assert.ok(maxDiff(a, first) > 1e-3, `${name} is not the first token alone`);
  });
  await check(`${name} pooling: refusals (empty input, bad ids, dimensions, encoding, too many)`, async () => {
    const bad = async (body, param) => {
      const r = await post(srv, '/v1/embeddings', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.param, param);
    };
    await bad({ input: '' }, 'input');
    await bad({ input: [] }, 'input');
    await bad({ input: [1.5] }, 'input');
    await bad({ input: [1e9] }, 'input');
    await bad({ input: 'x', dimensions: 7 }, 'dimensions');
    await bad({ input: 'x', encoding_format: 'hex' }, 'encoding_format');
    await bad({ input: Array(65).fill('x') }, 'input');
    const ok = await post(srv, '/v1/embeddings', { input: 'x', dimensions: 64 });
    assert.equal(ok.status, 200);
  });
}
await finish(servers);

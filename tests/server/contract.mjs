// The OpenAI contract as the official `openai` npm client sees it: chat and completions,
// streamed and not, chunk shapes, finish reasons, usage, stop strings, token limits, seeds,
// and a client abort that frees its slot.
import assert from 'node:assert/strict';
import { check, finish, loadOpenAI, metrics, model, post, sleep, startServer, stream } from './lib.mjs';

const OpenAI = await loadOpenAI();
const srv = await startServer({ modelPath: model('tiny'), args: ['--parallel', '2'], name: 'contract' });
const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
const MODEL = 'tiny';
const msgs = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Tell me about the sea.' }];

async function chatStream(params) {
  const s = await client.chat.completions.create({ model: MODEL, stream: true, ...params });
  const chunks = [];
  for await (const c of s) chunks.push(c);
  return chunks;
}
const textOf = (chunks) => chunks.map((c) => (c.choices[0] && c.choices[0].delta.content) || '').join('');

await check('models: /v1/models lists the served model', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [MODEL]);
  assert.equal(list.data[0].object, 'model');
});

let greedy = null;
await check('chat, not streamed: shape, finish_reason length, usage', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 12, temperature: 0, ignore_eos: true });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 12);
  assert.ok(r.usage.prompt_tokens > 5);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 12);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
  greedy = r.choices[0].message.content;
});

await check('chat, streamed: role in the first chunk, same id/created, same text as not streamed', async () => {
  const chunks = await chatStream({ messages: msgs, max_tokens: 12, temperature: 0, ignore_eos: true });
  assert.ok(chunks.length >= 2);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  for (const c of chunks.slice(1)) assert.equal(c.choices[0].delta.role, undefined, 'role only in the first chunk');
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
    assert.equal(c.created, chunks[0].created);
    assert.equal(c.model, MODEL);
    assert.equal(c.usage, null, 'usage is null without include_usage');
  }
  const last = chunks[chunks.length - 1];
  assert.equal(last.choices[0].finish_reason, 'length');
  for (const c of chunks.slice(0, -1)) assert.equal(c.choices[0].finish_reason, null);
  assert.equal(textOf(chunks), greedy);
});

await check('chat, streamed with include_usage: one usage chunk with choices [] before [DONE]', async () => {
  const chunks = await chatStream({ messages: msgs, max_tokens: 9, temperature: 0, ignore_eos: true,
    stream_options: { include_usage: true } });
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 9);
  assert.ok(last.usage.prompt_tokens > 5);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 9);
  // the same prompt ran before: all of it but the last token comes from the prefix cache
  assert.equal(last.usage.prompt_tokens_details.cached_tokens, last.usage.prompt_tokens - 1);
  for (const c of chunks.slice(0, -1)) {
    assert.equal(c.usage, null);
    assert.equal(c.choices.length, 1);
  }
  // raw framing: data events only, [DONE] last, usage chunk just before it
  const raw = await post(srv, '/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 3, stream: true,
    stream_options: { include_usage: true } });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('content-type'), 'text/event-stream');
  assert.equal(raw.events[raw.events.length - 1], '[DONE]');
  const u = JSON.parse(raw.events[raw.events.length - 2]);
  assert.deepEqual(u.choices, []);
  assert.equal(u.usage.completion_tokens <= 3, true);
});

await check('completions, not streamed and streamed: text_completion shape and equal text', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 10, temperature: 0, ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.equal(r.usage.completion_tokens, 10);
  const s = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 10, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  let text = '';
  const chunks = [];
  for await (const c of s) {
    chunks.push(c);
    if (c.choices.length) text += c.choices[0].text;
  }
  assert.equal(text, r.choices[0].text);
  assert.equal(chunks[chunks.length - 2].choices[0].finish_reason, 'length');
  assert.equal(chunks[chunks.length - 1].usage.completion_tokens, 10);
  assert.equal(chunks[chunks.length - 1].usage.prompt_tokens_details.cached_tokens, r.usage.prompt_tokens - 1);
});

await check('finish_reason stop at an end-of-generation token (streamed and not)', async () => {
  // the random model ends a text now and then: find a seed where it does within 300 tokens
  let found = null;
  for (let seed = 1; seed <= 40 && !found; seed++) {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 300, temperature: 1, seed });
    if (r.choices[0].finish_reason === 'stop') found = { seed, r };
    else assert.equal(r.choices[0].finish_reason, 'length');
  }
  assert.ok(found, 'no seed of 40 ended with an end-of-generation token');
  assert.ok(found.r.usage.completion_tokens < 300);
  const chunks = await chatStream({ messages: msgs, max_tokens: 300, temperature: 1, seed: found.seed });
  assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, 'stop');
  assert.equal(textOf(chunks), found.r.choices[0].message.content);
  // and with ignore_eos the same request runs to its limit
  const r2 = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 300, temperature: 1,
    seed: found.seed, ignore_eos: true });
  assert.equal(r2.choices[0].finish_reason, 'length');
  assert.equal(r2.usage.completion_tokens, 300);
});

await check('max_tokens and max_completion_tokens (the latter wins)', async () => {
  const base = { model: MODEL, messages: msgs, temperature: 0, ignore_eos: true };
  const a = await client.chat.completions.create({ ...base, max_tokens: 5 });
  assert.equal(a.usage.completion_tokens, 5);
  assert.equal(a.choices[0].finish_reason, 'length');
  const b = await client.chat.completions.create({ ...base, max_completion_tokens: 7 });
  assert.equal(b.usage.completion_tokens, 7);
  const c = await client.chat.completions.create({ ...base, max_tokens: 20, max_completion_tokens: 4 });
  assert.equal(c.usage.completion_tokens, 4);
  const chunks = await chatStream({ ...base, max_completion_tokens: 6, stream_options: { include_usage: true } });
  assert.equal(chunks[chunks.length - 1].usage.completion_tokens, 6);
});

await check('stop strings across token boundaries never leak a partial match', async () => {
  const base = { model: MODEL, prompt: 'The quick brown fox', temperature: 0, ignore_eos: true, max_tokens: 80 };
  // token pieces of the greedy text, from a stream (one chunk per token here)
  const s = await client.completions.create({ ...base, stream: true });
  const pieces = [];
  for await (const c of s) pieces.push(c.choices[0].text);
  const full = pieces.join('');
  const plain = (x) => [...x].every((ch) => ch.length === 1);
  // boundaries after which a 4-character window spans two pieces and occurs first there
  const cands = [];
  let at = 0;
  for (let i = 0; i + 1 < pieces.length; i++) {
    at += pieces[i].length;
    if (pieces[i].length < 1 || pieces[i + 1].length < 1) continue;
    for (const [l, rr] of [[1, 3], [2, 2], [3, 1]]) {
      if (at - l < 1 || at + rr > full.length) continue;
      const stop = full.slice(at - l, at + rr);
      if (plain(stop) && full.indexOf(stop) === at - l && !stop.includes('\n')) cands.push({ stop, cut: at - l });
    }
  }
  assert.ok(cands.length >= 3, `too few boundary-spanning stop candidates in ${JSON.stringify(full)}`);
  for (const { stop, cut } of [cands[0], cands[Math.floor(cands.length / 2)], cands[cands.length - 1]]) {
    const want = full.slice(0, cut);
    const r = await client.completions.create({ ...base, stop: [stop] });
    assert.equal(r.choices[0].text, want, `not streamed, stop ${JSON.stringify(stop)}`);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const st = await client.completions.create({ ...base, stop: ['\u0001never', stop], stream: true });
    const got = [];
    let fin = null;
    for await (const c of st) {
      got.push(c.choices[0].text);
      if (c.choices[0].finish_reason) fin = c.choices[0].finish_reason;
    }
    assert.equal(got.join(''), want, `streamed, stop ${JSON.stringify(stop)}`);
    assert.equal(fin, 'stop');
    // the chat endpoint cuts the same way
    const ch = await chatStream({ messages: msgs, temperature: 0, ignore_eos: true, max_tokens: 80 });
    const chatFull = textOf(ch);
    const cut2 = chatFull.indexOf(stop);
    if (cut2 >= 0) {
      const ch2 = await chatStream({ messages: msgs, temperature: 0, ignore_eos: true, max_tokens: 80, stop });
      assert.equal(textOf(ch2), chatFull.slice(0, cut2));
    }
  }
  // a partial match that never completes is released in full at the end
  const { stop, cut } = cands[0];
  const partial = stop.slice(0, 2) + '\u0002\u0003';
  const r = await client.completions.create({ ...base, stop: partial });
  assert.equal(r.choices[0].text, full, `held-back text of ${JSON.stringify(partial)} not released (cut ${cut})`);
  assert.equal(r.choices[0].finish_reason, 'length');
});

await check('seed reproducibility at temperature 0.9', async () => {
  const p = { model: MODEL, messages: msgs, temperature: 0.9, max_tokens: 40, ignore_eos: true };
  const a = await client.chat.completions.create({ ...p, seed: 1234 });
  const b = await client.chat.completions.create({ ...p, seed: 1234 });
  const c = await client.chat.completions.create({ ...p, seed: 4321 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.notEqual(a.choices[0].message.content, c.choices[0].message.content);
  const sa = textOf(await chatStream({ ...p, seed: 1234 }));
  assert.equal(sa, a.choices[0].message.content, 'streamed and not streamed with one seed');
});

await check('abort mid-stream frees the slot within a second', async () => {
  const before = await metrics(srv);
  assert.equal(before.strata_slots_busy, 0);
  const ctl = new AbortController();
  let n = 0, busyWhileStreaming = -1;
  const p = stream(srv, '/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 3500, ignore_eos: true,
    stream: true }, async () => {
    if (++n === 3) {
      busyWhileStreaming = (await metrics(srv)).strata_slots_busy;
      ctl.abort();
    }
  }, ctl.signal).catch((e) => e);
  const err = await p;
  assert.equal(err.name, 'AbortError');
  assert.equal(busyWhileStreaming, 1, 'the request was running when the client went away');
  const t0 = Date.now();
  let m;
  while ((m = await metrics(srv)).strata_slots_busy !== 0) await sleep(20);
  const took = Date.now() - t0;
  console.log(`     slot free ${took} ms after the abort`);
  assert.ok(took < 1000, `slot still busy ${took} ms after the abort`);
  const gen = m.strata_generated_tokens_total - before.strata_generated_tokens_total;
  assert.ok(gen < 3500, `the request was cancelled, not run to its end (${gen} tokens generated)`);
  // the SDK's own abort does the same
  const s = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 3500, ignore_eos: true, stream: true });
  let k = 0;
  for await (const c of s) { void c; if (++k === 3) break; } // break closes the response
  const t1 = Date.now();
  while ((await metrics(srv)).strata_slots_busy !== 0) await sleep(20);
  assert.ok(Date.now() - t1 < 1000, `slot still busy ${Date.now() - t1} ms after the SDK stream was closed`);
});

await check('a client that goes away during prefill cancels it within a step', async () => {
  // ~2.7K new tokens: several 512-token prefill steps of the (slower) demo model
  const demo = await startServer({ modelPath: model('demo'), name: 'contract-prefill' });
  try {
    const prompt = Array.from({ length: 700 }, (_, i) => `w${(i * 7919) % 1000}`).join(' ');
    const before = await metrics(demo);
    const ctl = new AbortController();
    const p = fetch(`${demo.base}/v1/completions`, { method: 'POST', signal: ctl.signal,
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt, max_tokens: 4 }) }).catch((e) => e);
    let atAbort = 0;
    for (let i = 0; i < 500; i++) { // until its prefill has started
      const m = await metrics(demo);
      atAbort = m.strata_engine_prefill_tokens_total - before.strata_engine_prefill_tokens_total;
      if (m.strata_slots_busy === 1 && atAbort > 0) break;
      await sleep(5);
    }
    ctl.abort();
    assert.equal((await p).name, 'AbortError');
    const t0 = Date.now();
    let m;
    while ((m = await metrics(demo)).strata_slots_busy !== 0) await sleep(10);
    const read = m.strata_engine_prefill_tokens_total - before.strata_engine_prefill_tokens_total;
    console.log(`     ${atAbort} prompt tokens read at the abort, ${read} when cancelled; slot free ${Date.now() - t0} ms after`);
    // the step running at the abort finishes (and at most one that began as the figures were read)
    assert.ok(read <= atAbort + 2 * 512, `cancelled within a step of the abort (${atAbort} -> ${read})`);
    assert.equal(m.strata_generated_tokens_total, before.strata_generated_tokens_total, 'nothing was generated');
    const c = new OpenAI({ baseURL: `${demo.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const full = await c.completions.create({ prompt, max_tokens: 1 });
    console.log(`     (the prompt has ${full.usage.prompt_tokens} tokens)`);
    assert.ok(full.usage.prompt_tokens > 2000);
    assert.ok(read <= full.usage.prompt_tokens - 512, `prefill stopped early (${read} of ${full.usage.prompt_tokens} tokens read)`);
  } finally {
    await demo.stop();
  }
});

await check('per-request log line says how the prompt was served', async () => {
  assert.match(srv.log, /request \d+ chat stream: prompt \d+ tokens = \d+ reused \+ \d+ read, \d+ generated, prefill \d+ ms, decode [\d.]+ tok\/s, finish length/);
  assert.match(srv.log, /request \d+ completion: prompt \d+ tokens = \d+ reused \+ \d+ read, \d+ generated/);
  assert.match(srv.log, /listening on http:\/\/127\.0\.0\.1:\d+ \(API key off/);
  assert.match(srv.log, /engine \(pid \d+\) ready on .*: 2 slots x \d+ positions/);
});

await check('the server is healthy at the end', async () => {
  const h = await (await fetch(`${srv.base}/health`)).json();
  assert.equal(h.status, 'ok');
  assert.equal(h.engine_restarts, 0);
});

await check('SIGTERM: a stream in flight ends with an error event and [DONE]; the server exits 0', async () => {
  let killed = false;
  const res = await stream(srv, '/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 3500, ignore_eos: true,
    stream: true }, async () => { if (!killed) { killed = true; srv.proc.kill('SIGTERM'); } });
  const ev = res.events;
  assert.equal(ev[ev.length - 1], '[DONE]');
  const err = JSON.parse(ev[ev.length - 2]).error;
  assert.equal(err.code, 'server_shutdown');
  const t0 = Date.now();
  while (!srv.exited && Date.now() - t0 < 10000) await sleep(20);
  assert.deepEqual(srv.exited, { code: 0, sig: null });
  assert.match(srv.log, /shutting down/);
});

await finish([srv]);

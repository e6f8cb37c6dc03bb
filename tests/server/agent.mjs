// What agent clients need beyond plain chat, through the official `openai` client and raw
// HTTP: a Jinja chat template file (--chat-template-file) rendering tools and a multi-turn
// tool conversation (/apply-template), tools accepted on chat (streamed and not), a template
// error as a 400, /tokenize and /detokenize round trips, /props, and the fields not supported
// yet refused with a 400 that names them.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { STRATA, check, finish, loadOpenAI, model, post, startServer, stream } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const OpenAI = await loadOpenAI();
const srv = await startServer({
  modelPath: model('tiny'), name: 'agent',
  args: ['-np', '2', '--chat-template-file', path.join(here, 'agent_template.jinja'), '--jinja'],
});
const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const convo = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  { role: 'user', content: 'And Berlin?' },
];

await check('startup: the log names the Jinja template file', async () => {
  assert.match(srv.log, /chat template Jinja from .*agent_template\.jinja/);
});

await check('apply-template: tools and a multi-turn tool conversation rendered by the template', async () => {
  const r = await post(srv, '/apply-template', { messages: convo, tools });
  assert.equal(r.status, 200, r.text);
  const p = r.json.prompt;
  assert.ok(p.startsWith('<|im_start|>system\nYou are terse.\n\n# Tools\n<tools>\n{"type": "function", "function": {"name": "get_weather"'), p);
  assert.ok(p.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'), p);
  assert.ok(p.includes('<tool_response>\n{"temp": 21}\n</tool_response>'), p);
  assert.ok(p.endsWith('<|im_start|>user\nAnd Berlin?<|im_end|><|im_start|>assistant\n'), JSON.stringify(p.slice(-80)));
});

await check('chat with tools, not streamed: 200 and a valid choice', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: convo, tools, tool_choice: 'auto', max_tokens: 8, temperature: 0 });
  assert.equal(r.choices.length, 1);
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
  assert.equal(r.choices[0].message.role, 'assistant');
});

await check('chat with tools, streamed: chunks end with a finish_reason', async () => {
  const s = await client.chat.completions.create({ model: 'tiny', messages: convo, tools, max_tokens: 8, temperature: 0, stream: true });
  let fin = null, n = 0;
  for await (const c of s) { n++; if (c.choices[0] && c.choices[0].finish_reason) fin = c.choices[0].finish_reason; }
  assert.ok(n >= 2 && fin, `chunks ${n}, finish ${fin}`);
});

await check('tool_choice named and required are enforced: a call with schema-valid arguments, streamed and not', async () => {
  /* an enum keeps a random-weight model's arguments short; a free string would run to max_tokens */
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
    properties: { city: { enum: ['Paris', 'Berlin'] } }, required: ['city'] } } }];
  for (const tool_choice of [{ type: 'function', function: { name: 'get_weather' } }, 'required']) {
    const r = await client.chat.completions.create({ model: 'tiny', messages: convo, tools, tool_choice, parallel_tool_calls: false,
      max_tokens: 120, temperature: 1, seed: 5 });
    const ch = r.choices[0];
    assert.equal(ch.finish_reason, 'tool_calls', JSON.stringify(ch));
    assert.equal(ch.message.tool_calls.length, 1);
    assert.equal(ch.message.tool_calls[0].function.name, 'get_weather');
    assert.equal(typeof JSON.parse(ch.message.tool_calls[0].function.arguments).city, 'string');
  }
  const s = await client.chat.completions.create({ model: 'tiny', messages: convo, tools, tool_choice: 'required',
    parallel_tool_calls: false, max_tokens: 120, temperature: 1, seed: 6, stream: true });
  let name = '', args = '', fin = null, id = null;
  for await (const c of s) {
    const d = c.choices[0] && c.choices[0].delta;
    for (const tc of (d && d.tool_calls) || []) {
      if (tc.id) id = tc.id;
      name += (tc.function && tc.function.name) || '';
      args += (tc.function && tc.function.arguments) || '';
    }
    if (c.choices[0] && c.choices[0].finish_reason) fin = c.choices[0].finish_reason;
  }
  assert.equal(fin, 'tool_calls');
  assert.ok(id && name === 'get_weather', `${id} ${name}`);
  assert.equal(typeof JSON.parse(args).city, 'string');
});

await check('template error: raise_exception is a 400 with its message', async () => {
  const r = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'raise' }], max_tokens: 2 });
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.error.message, /no raising allowed/);
});

await check('tools: a malformed tool is a 400 naming it', async () => {
  const r = await post(srv, '/v1/chat/completions', { messages: convo, tools: [{ type: 'function', function: {} }] });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'tools');
  assert.match(r.json.error.message, /tools\[0\]\.function\.name/);
});

await check('tokenize / detokenize round trip, pieces', async () => {
  const t = await post(srv, '/tokenize', { content: 'hello world' });
  assert.equal(t.status, 200, t.text);
  assert.ok(Array.isArray(t.json.tokens) && t.json.tokens.length > 0);
  const d = await post(srv, '/detokenize', { tokens: t.json.tokens });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.json.content.trim(), 'hello world');
  const p = await post(srv, '/tokenize', { content: 'hello', with_pieces: true });
  assert.equal(typeof p.json.tokens[0].piece, 'string');
  const bad = await post(srv, '/detokenize', { tokens: [1e9] });
  assert.equal(bad.status, 400);
});

await check('props: template source, slots, context', async () => {
  const r = await fetch(`${srv.base}/props`);
  const j = await r.json();
  assert.match(j.chat_template_source, /agent_template\.jinja/);
  assert.equal(j.total_slots, 2);
  assert.ok(j.default_generation_settings.n_ctx > 0);
});

await check('slots: each slot\'s request, parameters and progress (llama-server fields); fail_on_no_slot', async () => {
  const idle = await (await fetch(`${srv.base}/slots`)).json();
  assert.equal(idle.length, 2);
  for (const [i, sl] of idle.entries()) {
    assert.equal(sl.id, i);
    assert.equal(sl.is_processing, false);
    assert.equal(sl.id_task, -1);
    assert.ok(sl.n_ctx > 0);
    assert.equal(sl.next_token.n_decoded, 0);
  }
  // two long streams fill both slots; /slots is read while they run (the stream waits for it)
  let seen = null, full = null;
  const body = (t) => ({ prompt: 'Once upon a time', max_tokens: 4000, ignore_eos: true, stream: true, temperature: t, top_k: 7, seed: 5 });
  const second = stream(srv, '/v1/completions', body(0.5));
  const first = stream(srv, '/v1/completions', body(0.25), async (d, i) => {
    if (i !== 3) return;
    seen = await (await fetch(`${srv.base}/slots`)).json();
    full = await fetch(`${srv.base}/slots?fail_on_no_slot=1`);
    await full.text();
  });
  await Promise.all([first, second]);
  const busy = seen.filter((sl) => sl.is_processing);
  assert.equal(busy.length, 2, JSON.stringify(seen));
  assert.deepEqual(busy.map((sl) => sl.params.temperature).sort(), [0.25, 0.5]);
  for (const sl of busy) {
    assert.ok(sl.id_task > 0);
    assert.equal(sl.params.top_k, 7);
    assert.equal(sl.params.n_predict, 4000);
    assert.ok(sl.params.seed === 5);
    assert.ok(sl.n_prompt_tokens > 0 && sl.n_prompt_tokens_processed === sl.n_prompt_tokens);
    assert.ok(sl.next_token.n_decoded > 0 && sl.next_token.n_decoded < 4000, JSON.stringify(sl));
    assert.equal(sl.next_token.n_remain, 4000 - sl.next_token.n_decoded);
    assert.equal(sl.next_token.has_next_token, true);
  }
  assert.equal(full.status, 503, 'no idle slot: fail_on_no_slot answers 503');
  const after = await fetch(`${srv.base}/slots?fail_on_no_slot=1`);
  assert.equal(after.status, 200);
  const done = await after.json();
  assert.ok(done.every((sl) => !sl.is_processing && sl.n_cached_tokens > 0), JSON.stringify(done));
});

const schema = { type: 'object', properties: { answer: { enum: ['yes', 'no'] }, n: { type: 'integer' }, sure: { type: 'boolean' } },
  required: ['answer', 'n'] };
function valid(o) {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return false;
  for (const k of Object.keys(o)) if (!['answer', 'n', 'sure'].includes(k)) return false;
  return ['yes', 'no'].includes(o.answer) && Number.isInteger(o.n) && (o.sure === undefined || typeof o.sure === 'boolean');
}

await check('json_schema: 50 of 50 sampled outputs parse and validate against the schema', async () => {
  let ok = 0, done = 0;
  const bad = [];
  for (let i = 0; i < 50; i += 2) {
    const rs = await Promise.all([i, i + 1].map((k) => client.chat.completions.create({
      model: 'tiny', messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 120, temperature: 1, seed: 1000 + k,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema } },
    })));
    for (const r of rs) {
      done++;
      let o = null;
      try { o = JSON.parse(r.choices[0].message.content); } catch { /* counted as bad */ }
      if (valid(o) && r.choices[0].finish_reason === 'stop') ok++;
      else bad.push(r.choices[0].message.content);
    }
  }
  assert.equal(ok, 50, `${ok}/${done} valid; first bad: ${JSON.stringify(bad[0])}`);
});

await check('json_object: the content is a JSON object', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'JSON please' }], max_tokens: 200,
    temperature: 1, seed: 7, response_format: { type: 'json_object' }, logit_bias: { } });
  const c = r.choices[0].message.content;
  if (r.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(c), 'object', c);
  else assert.ok(c.startsWith('{'), c); /* cut by max_tokens: still the start of an object */
});

await check('grammar: a GBNF grammar is followed; a wrong one is a 400 saying where', async () => {
  const r = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 20, temperature: 1, seed: 3,
    grammar: 'root ::= ("yes" | "no") "!"' });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.choices[0].message.content, /^(yes|no)!$/);
  const b = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], grammar: 'root ::= "a" (b' });
  assert.equal(b.status, 400);
  assert.equal(b.json.error.param, 'grammar');
  assert.match(b.json.error.message, /line 1, col \d+/);
  const s = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'json_schema', json_schema: { schema: { type: 'object', properties: { a: { type: 'strin' } } } } } });
  assert.equal(s.status, 400);
  assert.match(s.json.error.message, /properties\.a: unknown type 'strin'/);
});

await check('grammar bounds: pathological grammars fail fast with a clear error (schema at the start: 400; a grammar that explodes after its first byte: 400 from the engine, streamed or not), and the server goes on', async () => {
  // a chain of $defs, each anyOf three times the next: 3^25 parses of one string
  const defs = {};
  for (let i = 0; i < 25; i++) defs[`d${i}`] = { anyOf: [0, 1, 2].map(() => ({ $ref: `#/$defs/d${i + 1}` })) };
  defs.d25 = { type: 'string' };
  let t0 = Date.now();
  const a = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 8,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/$defs/d0', $defs: defs } } } });
  assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
  assert.equal(a.status, 400, a.text);
  assert.equal(a.json.error.code, 'invalid_grammar');
  assert.match(a.json.error.message, /too ambiguous/);
  // "s", then 3^20 expansions for the next byte: the start is fine, the first token is not
  let g = 'root ::= "s" d0\n';
  for (let i = 0; i < 20; i++) g += `d${i} ::= d${i + 1} | d${i + 1} | d${i + 1}\n`;
  g += 'd20 ::= [a-z] d0?\n';
  for (const streamed of [false, true]) {
    t0 = Date.now();
    const b = await post(srv, '/v1/completions', { prompt: 'x', max_tokens: 8, grammar: g, stream: streamed });
    assert.ok(Date.now() - t0 < 5000, `${Date.now() - t0} ms`);
    assert.equal(b.status, 400, b.text);
    assert.equal(b.json.error.code, 'invalid_grammar');
    assert.match(b.json.error.message, /^grammar: the grammar is too ambiguous: following one byte takes more than 65536 rule expansions/);
  }
  const h = await (await fetch(`${srv.base}/health`)).json();
  assert.equal(h.engine_restarts, 0, 'a grammar error is the request\'s, not the engine\'s');
  const ok = await post(srv, '/v1/completions', { prompt: 'x', max_tokens: 3, grammar: 'root ::= "ok"' });
  assert.equal(ok.status, 200);
  assert.equal(ok.json.choices[0].text, 'ok');
});

await check('logit_bias: +100 on one token makes a greedy decode repeat it; a bad key is a 400', async () => {
  const tok = 5;
  const r = await post(srv, '/v1/completions', { prompt: 'hello', max_tokens: 6, temperature: 0, logit_bias: { [tok]: 100 } });
  assert.equal(r.status, 200, r.text);
  const d = await post(srv, '/detokenize', { tokens: Array(6).fill(tok) });
  assert.equal(r.json.choices[0].text, d.json.content);
  const b = await post(srv, '/v1/completions', { prompt: 'hello', logit_bias: { abc: 1 } });
  assert.equal(b.status, 400);
  assert.equal(b.json.error.param, 'logit_bias');
});

await check('responses API (openai client): text, a tool offered, a function_call round trip, streamed events', async () => {
  const rtools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
  const r = await client.responses.create({ model: 'tiny', instructions: 'Be terse.', input: 'Weather in Paris?', tools: rtools,
    max_output_tokens: 6, temperature: 0 });
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(typeof r.output_text, 'string');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  const turn2 = await client.responses.create({ model: 'tiny', max_output_tokens: 4, temperature: 0, tools: rtools, input: [
    { role: 'user', content: 'Weather in Paris?' },
    { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { type: 'function_call_output', call_id: 'call_1', output: '{"temp": 21}' },
  ] });
  assert.ok(turn2.usage.input_tokens > r.usage.input_tokens - 10, 'the tool round trip reached the prompt');
  const stream = await client.responses.create({ model: 'tiny', input: 'hi', max_output_tokens: 5, temperature: 0, stream: true });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
  }
  assert.equal(types[0], 'response.created');
  assert.equal(types[types.length - 1], 'response.completed');
  assert.ok(types.includes('response.output_text.delta') && types.includes('response.output_item.done'), types.join(','));
  const bad = await post(srv, '/v1/responses', { input: 42 });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'input');
});

await check('embeddings: a generative model is a 400 that says it has no pooling', async () => {
  const r = await post(srv, '/v1/embeddings', { input: 'hello', model: 'tiny' });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, 'model_not_embedding');
  assert.match(r.json.error.message, /pooling_type/);
});

await check('logprobs: chat (openai client) and completions; values are log probabilities that sum sensibly', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 6,
    temperature: 0, logprobs: true, top_logprobs: 5 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const e of content) {
    assert.ok(e.logprob <= 0 && e.top_logprobs.length === 5, JSON.stringify(e));
    const mass = e.top_logprobs.reduce((a, t) => a + Math.exp(t.logprob), 0);
    assert.ok(mass > 0 && mass <= 1 + 1e-4, `top-5 probability mass ${mass}`);
    for (let k = 1; k < 5; k++) assert.ok(e.top_logprobs[k - 1].logprob >= e.top_logprobs[k].logprob);
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-6, 'greedy picks the most likely token');
    assert.deepEqual(Buffer.from(e.bytes).toString('latin1').length, e.bytes.length);
  }
  const c = await post(srv, '/v1/completions', { prompt: 'hello', max_tokens: 4, temperature: 0, logprobs: 3 });
  const lp = c.json.choices[0].logprobs;
  assert.equal(lp.tokens.length, 4);
  assert.equal(lp.tokens.join(''), c.json.choices[0].text);
  assert.deepEqual(lp.text_offset[0], 0);
  assert.ok(lp.token_logprobs.every((x) => x <= 0) && Object.keys(lp.top_logprobs[0]).length >= 1);
  const s = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
    temperature: 0, logprobs: true, stream: true });
  let n = 0;
  for await (const ch of s) if (ch.choices[0] && ch.choices[0].logprobs) n += ch.choices[0].logprobs.content.length;
  assert.equal(n, 4, 'every streamed token has its logprobs entry');
  const bad = await post(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 21 });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'top_logprobs');
});

await check('n=3 (openai client): three choices, indexed, usage summed', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], n: 3, max_tokens: 5,
    temperature: 1, seed: 11 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(r.usage.completion_tokens, 15);
  assert.ok(new Set(r.choices.map((c) => c.message.content)).size > 1, 'different seeds give different choices');
  const c = await client.completions.create({ model: 'tiny', prompt: 'hello', n: 2, max_tokens: 3, temperature: 0 });
  assert.equal(c.choices.length, 2);
  assert.equal(c.choices[0].text, c.choices[1].text, 'greedy choices agree');
});

await check('n=3 streamed (openai client, chat and completions): chunks indexed, each choice ends, the same texts as unstreamed, usage summed', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  const whole = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 6, temperature: 1, seed: 21 });
  const s = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 6, temperature: 1, seed: 21,
    stream: true, stream_options: { include_usage: true } });
  const text = ['', '', ''], fin = [null, null, null], roles = [0, 0, 0];
  let usage = null, ids = new Set();
  for await (const ch of s) {
    ids.add(ch.id);
    if (ch.usage) usage = ch.usage;
    for (const c of ch.choices) {
      text[c.index] += c.delta.content || '';
      if (c.delta.role) roles[c.index]++;
      if (c.finish_reason) fin[c.index] = c.finish_reason;
    }
  }
  assert.equal(ids.size, 1, 'one id for the whole stream');
  assert.deepEqual(fin, ['length', 'length', 'length']);
  assert.deepEqual(roles, [1, 1, 1]);
  assert.deepEqual(text, whole.choices.map((c) => c.message.content));
  assert.equal(usage.completion_tokens, 18);
  const cs = await client.completions.create({ model: 'tiny', prompt: 'Once', n: 2, max_tokens: 4, temperature: 1, seed: 3, stream: true });
  const ct = ['', ''];
  for await (const ch of cs) for (const c of ch.choices) ct[c.index] += c.text;
  const cw = await client.completions.create({ model: 'tiny', prompt: 'Once', n: 2, max_tokens: 4, temperature: 1, seed: 3 });
  assert.deepEqual(ct, cw.choices.map((c) => c.text));
});

await check('echo (completions): the prompt starts the text, streamed and not', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 3, temperature: 0, echo: true });
  assert.ok(r.choices[0].text.startsWith('Once upon'), r.choices[0].text);
  const s = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 3, temperature: 0, echo: true, stream: true });
  let text = '';
  for await (const ch of s) text += ch.choices[0] ? ch.choices[0].text : '';
  assert.equal(text, r.choices[0].text);
});

await check('flags: STRATA_ARG_* environment, -c as the whole pool over -np slots, a typo names the closest option', async () => {
  const e = await startServer({ modelPath: model('tiny'), name: 'agent-env', args: ['-fa', 'on', '-ngl', '99', '--jinja'],
    env: { STRATA_ARG_N_PARALLEL: '3', STRATA_ARG_CTX_SIZE: '3000', STRATA_ARG_CORS: 'https://a.example, https://b.example' } });
  try {
    const j = await (await fetch(`${e.base}/props`)).json();
    assert.equal(j.total_slots, 3);
    assert.equal(j.default_generation_settings.n_ctx, 1000);
    assert.match(e.log, /note: -fa\/--flash-attn/);
    /* CORS: a preflight, an allowed origin echoed, another not */
    const pre = await fetch(`${e.base}/v1/chat/completions`, { method: 'OPTIONS', headers: { Origin: 'https://b.example',
      'Access-Control-Request-Method': 'POST' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), 'https://b.example');
    assert.match(pre.headers.get('access-control-allow-headers'), /Authorization/);
    const ok = await fetch(`${e.base}/v1/models`, { headers: { Origin: 'https://a.example' } });
    assert.equal(ok.headers.get('access-control-allow-origin'), 'https://a.example');
    const no = await fetch(`${e.base}/v1/models`, { headers: { Origin: 'https://evil.example' } });
    assert.equal(no.headers.get('access-control-allow-origin'), null);
  } finally {
    await e.stop();
  }
  const r = spawnSync(STRATA, ['serve', '--ctx-sise', '5'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unknown option '--ctx-sise' \(did you mean --ctx-size\?\)/);
});

await finish([srv]);

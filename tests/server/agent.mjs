// What agent clients need beyond plain chat, through the official `openai` client and raw
// HTTP: a Jinja chat template file (--chat-template-file) rendering tools and a multi-turn
// tool conversation (/apply-template), tools accepted on chat (streamed and not), a template
// error as a 400, /tokenize and /detokenize round trips, /props, and the fields not supported
// yet refused with a 400 that names them.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, finish, loadOpenAI, model, post, startServer } from './lib.mjs';

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

await check('not supported yet: response_format, logprobs, n>1, grammar are 400s naming the field', async () => {
  for (const [k, v] of [['response_format', { type: 'json_object' }], ['logprobs', true], ['n', 2], ['grammar', 'root ::= "a"']]) {
    const r = await post(srv, '/v1/chat/completions', { messages: convo, max_tokens: 2, [k]: v });
    assert.equal(r.status, 400, `${k}: ${r.text}`);
    assert.equal(r.json.error.param, k);
  }
});

await finish([srv]);

// One request's input never kills the engine, and control tokens typed by a user stay text.
// The model: tiny with its token embedding and output cut to 300 rows while its tokenizer
// keeps 301 tokens (id 300 is <|end_of_text|>). The server warns at load; by default the
// control-token text in chat content is tokenized as text; with --content-specials parse it
// becomes id 300, and the request is refused with 400 instead of failing the engine. With a
// Jinja chat template (--chat-template-file) the contents are found in its rendering and stay
// text the same way.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIR, check, finish, model, patchedModel, post, startServer } from './lib.mjs';

const tmp = path.join(DIR, 'vocab');
fs.mkdirSync(tmp, { recursive: true });
const cut = patchedModel(model('tiny'), path.join(tmp, 'tiny-300.gguf'),
  { dims: { 'token_embd.weight': [64, 300], 'output.weight': [64, 300] } });
const chat = (content) => ({ model: 'tiny-300', messages: [{ role: 'user', content }], max_tokens: 3, ignore_eos: true });
const pidOf = async (srv) => (await (await fetch(`${srv.base}/health`)).json()).engine_pid;

const text = await startServer({ modelPath: cut, name: 'vocab-text' });
await check('load: the tokenizer/embedding mismatch is reported', async () => {
  assert.match(text.log, /tokenizer of .* has 301 tokens but the token embedding only 300 rows: a prompt with a token id >= 300 is refused \(400\)/);
});

await check('control tokens typed in chat content are text (default)', async () => {
  const pid = await pidOf(text);
  const plain = await post(text, '/v1/chat/completions', chat('hi there'));
  const ctl = await post(text, '/v1/chat/completions', chat('hi <|end_of_text|> there'));
  assert.equal(plain.status, 200, plain.text);
  assert.equal(ctl.status, 200, ctl.text);
  const extra = ctl.json.usage.prompt_tokens - plain.json.usage.prompt_tokens;
  assert.ok(extra >= 8, `<|end_of_text|> became ${extra} text tokens, not one special token`);
  assert.equal(await pidOf(text), pid, 'the same engine');
});

const parse = await startServer({ modelPath: cut, name: 'vocab-parse', args: ['--content-specials', 'parse'] });
await check('--content-specials parse: an out-of-vocabulary id is a 400, the engine lives', async () => {
  const pid = await pidOf(parse);
  const r = await post(parse, '/v1/chat/completions', chat('hi <|end_of_text|> there'));
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.error.message, /token 300 .* outside the model's vocabulary \(300 tokens\)/);
  const ok = await post(parse, '/v1/chat/completions', chat('hi there'));
  assert.equal(ok.status, 200, ok.text);
  assert.equal(await pidOf(parse), pid, 'the same engine: it never saw the token');
  assert.doesNotMatch(parse.log, /ERROR the engine/);
});

const here = path.dirname(fileURLToPath(import.meta.url));
const jinja = await startServer({ modelPath: cut, name: 'vocab-jinja',
  args: ['--chat-template-file', path.join(here, 'agent_template.jinja')] });
await check('control tokens typed in chat content are text with a Jinja template', async () => {
  const pid = await pidOf(jinja);
  const plain = await post(jinja, '/v1/chat/completions', chat('hi there'));
  const ctl = await post(jinja, '/v1/chat/completions', chat('hi <|end_of_text|> there'));
  assert.equal(plain.status, 200, plain.text);
  assert.equal(ctl.status, 200, ctl.text);
  const extra = ctl.json.usage.prompt_tokens - plain.json.usage.prompt_tokens;
  assert.ok(extra >= 8, `<|end_of_text|> became ${extra} text tokens, not one special token`);
  const sys = await post(jinja, '/v1/chat/completions', { ...chat('hi'), messages: [
    { role: 'system', content: [{ type: 'text', text: 'be <|end_of_text|> brief' }] }, { role: 'user', content: 'hi' }] });
  assert.equal(sys.status, 200, sys.text);
  assert.equal(await pidOf(jinja), pid, 'the same engine');
  assert.doesNotMatch(jinja.log, /changes a message's content/);
});

await finish([text, parse, jinja]);

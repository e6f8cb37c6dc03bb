// --ssl-key-file/--ssl-cert-file: a self-signed certificate made with the openssl command at
// test time; /health, a streamed chat and a completion over HTTPS; plain HTTP to the TLS port
// gets no answer; the start-up errors name the option and the file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, check, finish, model, post, runToExit, startServer, stream } from './lib.mjs';

const dir = path.join(DIR, 'tls');
const key = path.join(dir, 'key.pem'), cert = path.join(dir, 'cert.pem');

if (process.env.NODE_EXTRA_CA_CERTS !== cert) {
  fs.mkdirSync(dir, { recursive: true });
  const g = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert], { encoding: 'utf8' });
  if (g.error) {
    console.log('SKIP: the openssl command is not installed (it makes the test certificate)');
    process.exit(77);
  }
  if (g.status !== 0) {
    console.log(`openssl req failed:\n${g.stderr}`);
    process.exit(1);
  }
  // node reads NODE_EXTRA_CA_CERTS when it starts: run again with the certificate trusted
  const r = spawnSync(process.execPath, [process.argv[1]], { stdio: 'inherit', env: { ...process.env, NODE_EXTRA_CA_CERTS: cert } });
  process.exit(r.status ?? 1);
}

const reach = async (url) => {
  try { return (await fetch(`${url}/health`)).status; } catch { return 0; }
};

const s = await startServer({ modelPath: model('tiny'), name: 'tls', scheme: 'https',
  args: ['--ssl-key-file', key, '--ssl-cert-file', cert] });

await check('HTTPS: the log shows the https URL; /health answers over TLS', async () => {
  assert.match(s.log, new RegExp(`listening on https://127\\.0\\.0\\.1:${s.port} `));
  assert.equal(s.base, `https://127.0.0.1:${s.port}`);
  const r = await fetch(`${s.base}/health`);
  assert.equal(r.status, 200);
  assert.equal((await r.json()).status, 'ok');
});

await check('HTTPS: a streamed chat and a completion', async () => {
  const r = await stream(s, '/v1/chat/completions',
    { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  assert.equal(r.status, 200);
  assert.equal(r.events.at(-1), '[DONE]');
  const chunks = r.events.slice(0, -1).map((e) => JSON.parse(e));
  assert.ok(chunks.some((c) => c.choices?.[0]?.delta && 'content' in c.choices[0].delta), 'content deltas');
  assert.equal(chunks.at(-1).usage.completion_tokens, 8);
  const c = await post(s, '/v1/completions', { prompt: 'Once', max_tokens: 4, ignore_eos: true });
  assert.equal(c.status, 200);
  assert.equal(c.json.usage.completion_tokens, 4);
});

await check('plain HTTP to the TLS port gets no answer; HTTPS still works after it', async () => {
  assert.equal(await reach(`http://127.0.0.1:${s.port}`), 0);
  assert.equal(await reach(s.base), 200);
});

const serve = (args) => runToExit(['serve', '-m', model('tiny'), '--port', '1', ...args]);

await check('a missing key file: exit 1, the message names the option and the file', async () => {
  const r = await serve(['--ssl-key-file', path.join(dir, 'absent.pem'), '--ssl-cert-file', cert]);
  assert.equal(r.code, 1, r.log);
  assert.match(r.log, /--ssl-key-file \S*absent\.pem: cannot open the file/);
});

await check('only one of the two options: exit 1, says both are needed', async () => {
  const a = await serve(['--ssl-cert-file', cert]);
  assert.equal(a.code, 1, a.log);
  assert.match(a.log, /TLS needs both --ssl-key-file and --ssl-cert-file \(only --ssl-cert-file was given\)/);
  const b = await serve(['--ssl-key-file', key]);
  assert.equal(b.code, 1, b.log);
  assert.match(b.log, /\(only --ssl-key-file was given\)/);
});

await check('a certificate given as the key, a key as the certificate: no PEM block of that kind', async () => {
  const a = await serve(['--ssl-key-file', cert, '--ssl-cert-file', cert]);
  assert.equal(a.code, 1, a.log);
  assert.match(a.log, /--ssl-key-file \S*cert\.pem: no PEM '-----BEGIN \.\.\.PRIVATE KEY-----' block/);
  const b = await serve(['--ssl-key-file', key, '--ssl-cert-file', key]);
  assert.equal(b.code, 1, b.log);
  assert.match(b.log, /--ssl-cert-file \S*key\.pem: no PEM '-----BEGIN \.\.\.CERTIFICATE-----' block/);
});

await check('a key that GnuTLS cannot parse: exit 1, its reason and both files named', async () => {
  const bad = path.join(dir, 'bad-key.pem');
  fs.writeFileSync(bad, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
  const r = await serve(['--ssl-key-file', bad, '--ssl-cert-file', cert]);
  assert.equal(r.code, 1, r.log);
  assert.match(r.log, /GnuTLS/);
  assert.match(r.log, /cannot start HTTPS .*--ssl-key-file \S*bad-key\.pem \/ --ssl-cert-file \S*cert\.pem/);
});

await finish([s]);

// --host: IPv4 and IPv6 addresses (with or without brackets), names, the IPv6 wildcard (which
// takes IPv4 clients too), and a name that does not resolve (the server says so and exits).
import assert from 'node:assert/strict';
import { check, finish, model, runToExit, startServer } from './lib.mjs';

const reach = async (url) => {
  try { return (await fetch(`${url}/health`)).status; } catch { return 0; }
};

await check('--host ::1: IPv6 loopback only; the log shows the URL with brackets', async () => {
  const s = await startServer({ modelPath: model('tiny'), name: 'host-v6', args: ['--host', '::1'], connect: '[::1]' });
  assert.match(s.log, new RegExp(`listening on http://\\[::1\\]:${s.port} `));
  assert.equal(await reach(s.base), 200);
  assert.equal(await reach(`http://127.0.0.1:${s.port}`), 0, 'not on IPv4');
  const r = await fetch(`${s.base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once', max_tokens: 4 }) });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).usage.completion_tokens, 4);
  await s.stop();
});

await check('--host [::1] (brackets) and --host localhost (a name: its IPv4 address)', async () => {
  const b = await startServer({ modelPath: model('tiny'), name: 'host-brackets', args: ['--host', '[::1]'], connect: '[::1]' });
  assert.equal(await reach(b.base), 200);
  await b.stop();
  const l = await startServer({ modelPath: model('tiny'), name: 'host-name', args: ['--host', 'localhost'] });
  assert.match(l.log, new RegExp(`listening on http://127\\.0\\.0\\.1:${l.port} `));
  assert.equal(await reach(`http://localhost:${l.port}`), 200);
  await l.stop();
});

await check('--host :: listens on IPv6 and IPv4', async () => {
  const s = await startServer({ modelPath: model('tiny'), name: 'host-any6', args: ['--host', '::'] });
  assert.match(s.log, new RegExp(`listening on http://\\[::\\]:${s.port} `));
  assert.equal(await reach(`http://127.0.0.1:${s.port}`), 200);
  assert.equal(await reach(`http://[::1]:${s.port}`), 200);
  await s.stop();
});

await check('--host with a name that does not resolve: a message naming it, non-zero exit', async () => {
  const r = await runToExit(['serve', '-m', model('tiny'), '--host', 'no-such-host.invalid', '--port', '1']);
  assert.notEqual(r.code, 0);
  assert.match(r.log, /--host 'no-such-host\.invalid' is not an address or a name this machine resolves/);
});

await finish();

// Peak RSS of `strata serve` while N connections each send a 1 MB body without the API key.
// usage: node bench/server_auth_memory.mjs STRATA_BIN MODEL.gguf [N]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

const [bin, model, n = '200'] = process.argv.slice(2);
const port = 18000 + Math.floor(Math.random() * 1000);
const proc = spawn(bin, ['serve', '-m', model, '--port', String(port), '--api-key', 'sk-bench', '--max-body', '2000000'],
  { stdio: ['ignore', 'ignore', 'ignore'] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const kb = (k) => Number(fs.readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
for (let i = 0; i < 100; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) break; } catch {} await sleep(100); }
const base = kb('VmHWM');
const size = 1000000, body = Buffer.alloc(size, 32);
const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
const t0 = Date.now();
const st = await Promise.all(Array.from({ length: Number(n) }, () => new Promise((resolve) => {
  const s = net.connect(port, '127.0.0.1', () => { s.write(head); s.write(body); });
  let got = '';
  s.on('data', (d) => { got += d; });
  s.on('error', () => {});
  s.on('close', () => resolve((got.match(/^HTTP\/1\.1 (\d+)/) || [])[1] || 'closed'));
  setTimeout(() => s.destroy(), 20000);
})));
const counts = {};
for (const x of st) counts[x] = (counts[x] || 0) + 1;
console.log(`${n} x 1 MB bodies without the key: ${JSON.stringify(counts)} in ${Date.now() - t0} ms; ` +
  `front peak RSS ${(base / 1024).toFixed(1)} -> ${(kb('VmHWM') / 1024).toFixed(1)} MiB`);
proc.kill('SIGTERM');

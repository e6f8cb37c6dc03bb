// Client of bench/server/batching.sh: runs N concurrent greedy streams against a running
// `strata serve` and prints the aggregate decode rate as JSON.
// usage: node batching.mjs BASE_URL N_CONCURRENT MAX_TOKENS
const [base, nStr, genStr] = process.argv.slice(2);
const n = Number(nStr), gen = Number(genStr);

async function one(i) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: `Request ${i}: once upon a time`, max_tokens: gen, temperature: 0, ignore_eos: true,
      stream: true, stream_options: { include_usage: true } }),
  });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
  const dec = new TextDecoder();
  let first = 0, tokens = 0, buf = '';
  for await (const part of r.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const d = buf.slice(6, k);
      buf = buf.slice(k + 2);
      if (d === '[DONE]') continue;
      const j = JSON.parse(d);
      if (j.error) throw new Error(j.error.message);
      if (j.usage) tokens = j.usage.completion_tokens;
      else if (!first) first = performance.now();
    }
  }
  return { t0, first, end: performance.now(), tokens };
}

const res = await Promise.all(Array.from({ length: n }, (_, i) => one(i)));
// decode window: from the last first token (every stream decoding) to the last end
const start = Math.max(...res.map((r) => r.first)), end = Math.max(...res.map((r) => r.end));
const startAll = Math.min(...res.map((r) => r.first));
const tokens = res.reduce((a, r) => a + r.tokens - 1, 0);
console.log(JSON.stringify({
  concurrent: n, max_tokens: gen, tokens_after_first: tokens,
  seconds: +((end - startAll) / 1000).toFixed(3),
  aggregate_decode_tok_s: +(tokens / ((end - startAll) / 1000)).toFixed(2),
  per_stream_tok_s: res.map((r) => +((r.tokens - 1) / ((r.end - r.first) / 1000)).toFixed(2)),
  ttft_ms: res.map((r) => Math.round(r.first - r.t0)),
  all_decoding_from_s: +((start - startAll) / 1000).toFixed(3),
}));

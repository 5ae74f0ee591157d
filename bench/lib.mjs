// lib.mjs holds what the whole-system benchmarks' loads share: calls to a
// node's API, waiting for a condition, one greedy streamed completion
// timed as a client sees it, and the median. Standard library only.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// api returns a caller of the API at base URLs with the key (none when empty).
export function api(key) {
  return async function call(base, method, path, body) {
    const headers = { "content-type": "application/json" };
    if (key) headers.authorization = `Bearer ${key}`;
    const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${base}${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
}

// until polls f every 100 ms until it returns a truthy value, for at most
// seconds, and returns it.
export async function until(what, f, seconds) {
  let last;
  for (let t = 0; t < seconds * 10; t++) {
    try {
      const v = await f();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`${what}: not within ${seconds} s${last ? ` (${last.message})` : ""}`);
}

// stream sends one greedy streaming completion of model and returns the
// client's view: time to the first token, tokens generated, the decode
// rate after the first token, and the wall time to the last.
export async function stream(base, key, model, k, n) {
  const headers = { "content-type": "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const t0 = performance.now();
  const res = await fetch(base + "/v1/completions", {
    method: "POST", headers,
    body: JSON.stringify({ model, prompt: `Story ${k}: once upon a time`, max_tokens: n, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok) throw new Error(`completion: ${res.status} ${await res.text()}`);
  let first = 0, last = 0, chunks = 0, usage = null, buf = "";
  const dec = new TextDecoder();
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const d = JSON.parse(ev.slice(6));
      if (d.usage) usage = d.usage;
      if (d.choices?.length) {
        const now = performance.now();
        if (!first) first = now;
        last = now;
        chunks++;
      }
    }
  }
  const gen = usage?.completion_tokens ?? chunks;
  return { ttft: first - t0, gen, decode: gen > 1 && last > first ? (gen - 1) / ((last - first) / 1000) : 0, wall: last - t0 };
}

// aggregate runs n streams at once and returns their tokens per second.
export async function aggregate(base, key, model, n, tokens, round) {
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: n }, (_, k) => stream(base, key, model, round * 100 + k, tokens)));
  return rs.reduce((a, r) => a + r.gen, 0) / ((performance.now() - t0) / 1000);
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

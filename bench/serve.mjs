// serve.mjs measures whole servers under concurrent clients: one `skulk run`
// per binary given (a private home and loopback ports each) and, with
// --llama-server, llama.cpp's llama-server on the same GGUF file with the
// same thread count. Every request is a greedy, streamed completion of the
// same prompt on every server (skulk: /v1/completions; llama-server: its
// /completion), timed on the client; rounds alternate the servers' order.
//
//   node bench/serve.mjs --model FILE [--skulk BIN]... [--llama-server BIN]
//       [--concurrency 1,4,8,16] [--tokens 64] [--rounds 3] [--threads 2]
//       [--throughput] [--interference] [--multiturn] [--speculative] [--json]
//
// Modes (the first is the default when none is named; several may be named):
//   --throughput    aggregate decode tokens/s of N streams at once, for each N
//                   in --concurrency (llama-server restarted with -np N)
//   --interference  inter-token latency p99 of --streams running streams, alone
//                   and while a --long-prompt-token prompt arrives
//   --multiturn     a --turns-turn chat (completions text, the whole history
//                   resent each turn) after a --system-tokens system prompt:
//                   time to first token of the last turn against the first
//   --speculative   a repetitive code-edit prompt, one stream, decode tokens/s
//                   with speculative decoding against without (llama-server:
//                   --spec-args, default prompt lookup `--spec-type
//                   ngram-simple`; skulk: a card with runtime.speculative =
//                   "lookup", skipped with a message where the binary refuses
//                   or ignores it)
//
// llama-server runs with -t/-tb THREADS -np N -c N×ctx --cont-batching; skulk
// with --threads THREADS, SKULK_SLOTS=--slots (default: the most streams any
// chosen mode sends at once) and a placement of --ctx context tokens.
// Standard library only: Node's fetch and child_process.
import { spawn } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    model: { type: "string" },
    skulk: { type: "string", multiple: true },
    "llama-server": { type: "string" },
    concurrency: { type: "string", default: "1,4" },
    tokens: { type: "string", default: "64" },
    rounds: { type: "string", default: "3" },
    threads: { type: "string", default: "2" },
    ctx: { type: "string", default: "8192" },
    slots: { type: "string" },
    throughput: { type: "boolean", default: false },
    interference: { type: "boolean", default: false },
    multiturn: { type: "boolean", default: false },
    speculative: { type: "boolean", default: false },
    streams: { type: "string", default: "4" },
    "long-prompt": { type: "string", default: "2048" },
    turns: { type: "string", default: "10" },
    "system-tokens": { type: "string", default: "1500" },
    "turn-tokens": { type: "string", default: "16" },
    "spec-args": { type: "string", default: "--spec-type ngram-simple" },
    "llama-ban": { type: "string", default: "3-258" },
    json: { type: "boolean", default: false },
  },
});
const usage = `usage: node bench/serve.mjs --model FILE [--skulk BIN]... [--llama-server BIN]
    [--concurrency 1,4,8,16] [--tokens N] [--rounds N] [--threads N] [--ctx N] [--slots N]
    [--throughput] [--interference [--streams N] [--long-prompt N]]
    [--multiturn [--turns N] [--system-tokens N] [--turn-tokens N]]
    [--speculative [--spec-args "LLAMA-SERVER ARGS"]] [--llama-ban FROM-TO] [--json]`;
if (!opt.model) {
  console.error(usage);
  process.exit(2);
}
const num = (name) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name} ${opt[name]}: want a positive whole number\n${usage}`);
    process.exit(2);
  }
  return v;
};
const model = resolve(opt.model); // a node imports only absolute paths under its import directories
const tokens = num("tokens"), rounds = num("rounds"), ctx = num("ctx"), streams = num("streams");
const longPrompt = num("long-prompt"), turns = num("turns"), systemTokens = num("system-tokens"), turnTokens = num("turn-tokens");
const levels = opt.concurrency.split(",").map((s) => Number(s.trim()));
if (levels.some((n) => !Number.isInteger(n) || n < 1)) {
  console.error(`--concurrency ${opt.concurrency}: want positive whole numbers separated by commas\n${usage}`);
  process.exit(2);
}
const modes = ["throughput", "interference", "multiturn", "speculative"].filter((m) => opt[m]);
if (modes.length === 0) modes.push("throughput");
const slots = opt.slots ? num("slots") : Math.max(
  modes.includes("throughput") ? Math.max(...levels) : 1,
  modes.includes("interference") ? streams + 1 : 1,
);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (s) => console.error(s);
const scratch = mkdtempSync(join(tmpdir(), "skulk-serve-bench-"));

async function call(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    const err = new Error(`${method} ${path}: ${res.status} ${text}`);
    err.status = res.status;
    throw err;
  }
  return JSON.parse(text);
}

const freePort = () => 40000 + Math.floor(Math.random() * 20000);

// --- servers -------------------------------------------------------------

// A skulk engine keeps its home across restarts, so the model is imported
// (copied and hashed) once.
function skulkEngine(bin, i) {
  return { kind: "skulk", name: `skulk ${bin}`, bin, i, home: join(scratch, `skulk-${i}`), model: "bench" };
}

async function startSkulk(e) {
  mkdirSync(e.home, { recursive: true });
  const port = freePort();
  e.base = `http://127.0.0.1:${port}`;
  e.child = spawn(e.bin, [
    "run", "--home", e.home, "--api-addr", `127.0.0.1:${port}`, "--gossip-addr", "127.0.0.1:0",
    "--quic-addr", "127.0.0.1:0", "--no-mdns", "--offline", "--threads", opt.threads, "--log-level", "warn",
  ], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, SKULK_IMPORT_DIRS: dirname(model), SKULK_SLOTS: String(slots) } });
  e.exited = null;
  e.child.on("exit", (code, sig) => { e.exited = `exited (${sig ?? code})`; });
  for (let t = 0; ; t++) {
    if (e.exited) throw new Error(`${e.name} ${e.exited} before answering`);
    try {
      await call(e.base, "GET", "/state");
      break;
    } catch {
      if (t > 600) throw new Error(`${e.name} never answered`);
      await sleep(100);
    }
  }
  try {
    const r = await call(e.base, "POST", "/models/import", { path: model, id: e.model });
    e.card = r.card;
  } catch (err) {
    if (err.status !== 409) throw err; // 409: imported by an earlier start
  }
  let s = await call(e.base, "GET", "/state");
  let inst = Object.entries(s.instances ?? {}).find(([, v]) => v.model_id === e.model)?.[0];
  // A model trained for less context than --ctx gets all it has.
  const context = Math.min(ctx, e.card?.context_length || ctx);
  if (!inst) ({ instance_id: inst } = await call(e.base, "POST", "/place_instance", { model_id: e.model, context_tokens: context }));
  for (let t = 0; ; t++) {
    s = await call(e.base, "GET", "/state");
    if (s.instances?.[inst]?.status === "ready") break;
    if (e.exited) throw new Error(`${e.name} ${e.exited} while loading`);
    if (t > 3000) throw new Error(`${e.name}: the instance never became ready`);
    await sleep(100);
  }
}

async function stop(e) {
  if (!e.child) return;
  const child = e.child;
  e.child = null;
  if (e.exited) return;
  const gone = new Promise((r) => child.on("exit", r));
  child.kill("SIGTERM");
  await Promise.race([gone, sleep(10000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

function llamaEngine(bin) {
  return { kind: "llama", name: `llama-server ${bin}`, bin, model: "bench", np: 0, args: [] };
}

// startLlama (re)starts llama-server with np slots of perSlot context each
// (its -c is the total, shared by the slots).
async function startLlama(e, np, perSlot, extra = []) {
  await stop(e);
  const port = freePort();
  e.base = `http://127.0.0.1:${port}`;
  e.np = np;
  e.args = extra;
  e.log = join(scratch, `llama-server-np${np}.log`);
  const args = [
    "-m", model, "-t", opt.threads, "-tb", opt.threads, "-np", String(np), "-c", String(np * perSlot),
    "--cont-batching", "--host", "127.0.0.1", "--port", String(port), "--no-webui", "-a", e.model, ...extra,
  ];
  const out = openSync(e.log, "a");
  e.child = spawn(e.bin, args, { stdio: ["ignore", out, out] });
  e.exited = null;
  e.child.on("exit", (code, sig) => { e.exited = `exited (${sig ?? code}); see ${e.log}`; });
  for (let t = 0; ; t++) {
    if (e.exited) throw new Error(`${e.name} ${e.exited}`);
    try {
      const r = await fetch(e.base + "/health");
      if (r.ok) break;
    } catch { /* not listening yet */ }
    if (t > 1200) throw new Error(`${e.name} never became healthy; see ${e.log}`);
    await sleep(100);
  }
}

// --- requests ------------------------------------------------------------

// llama-server's streaming parses its output as text and ends the stream
// with an error ("does not match the expected Content-only format") on
// bytes that are not UTF-8, which a random-weight model's byte tokens make.
// --llama-ban FROM-TO (default the byte tokens <0x00>..<0xFF> of the
// synthesized models' llama vocabulary, ids 3-258) forbids them there
// (logit_bias false). Greedy texts then differ between the servers; the
// work per token does not. "" turns it off.
const llamaBan = (() => {
  if (!opt["llama-ban"]) return undefined;
  const m = opt["llama-ban"].match(/^(\d+)-(\d+)$/);
  if (!m) {
    console.error(`--llama-ban ${opt["llama-ban"]}: want FROM-TO token ids, or ""`);
    process.exit(2);
  }
  const out = [];
  for (let t = Number(m[1]); t <= Number(m[2]); t++) out.push([t, false]);
  return out;
})();

// complete sends one streamed greedy completion and times every chunk that
// carries text. onChunk(count) is called after each. skulk gets OpenAI's
// /v1/completions; llama-server its own /completion, the same sampling
// without the OpenAI layer, whose output parser refuses some of a
// random-weight model's text ("does not match the expected Content-only
// format") and ends the stream.
async function complete(e, prompt, maxTokens, onChunk) {
  const native = e.kind === "llama";
  const body = native
    ? { prompt, n_predict: maxTokens, temperature: 0, stream: true, cache_prompt: true, ...(llamaBan && { logit_bias: llamaBan }) }
    : { model: e.model, prompt, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
  const path = native ? "/completion" : "/v1/completions";
  const t0 = performance.now();
  const res = await post(e.base + path, body);
  if (res.statusCode !== 200) {
    let msg = "";
    for await (const b of res) msg += b;
    throw new Error(`${e.name}: POST ${path}: ${res.statusCode} ${msg}`);
  }
  const dec = new TextDecoder();
  const times = [];
  let buf = "", text = "", usage, timings;
  for await (const bytes of res) {
    buf += dec.decode(bytes, { stream: true });
    for (let i; (i = buf.indexOf("\n")) >= 0;) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (data === "[DONE]") continue;
      const j = JSON.parse(data);
      if (j.error) throw new Error(`${e.name}: stream error: ${JSON.stringify(j.error)}`);
      const t = native ? j.content : j.choices?.[0]?.text;
      if (t) {
        times.push(performance.now());
        text += t;
        onChunk?.(times.length);
      }
      if (j.usage) usage = j.usage;
      if (j.timings) timings = j.timings;
    }
  }
  const end = performance.now();
  return {
    t0, end, times, text, usage, timings,
    tokens: usage?.completion_tokens ?? timings?.predicted_n ?? times.length,
    // llama-server's prompt_n counts only the tokens it evaluated, cache_n the reused ones.
    promptTokens: usage?.prompt_tokens ?? (timings ? (timings.prompt_n ?? 0) + (timings.cache_n ?? 0) : undefined),
    cached: usage?.prompt_tokens_details?.cached_tokens ?? timings?.cache_n,
    ttft: (times[0] ?? end) - t0,
  };
}

// post sends a JSON body and resolves to the response stream. node:http,
// not fetch: fetch gives up after 300 s without headers or between chunks,
// and on a loaded machine a long prompt's prefill takes longer than that.
// A connection per request (agent: false): a kept-alive socket the server
// has closed meanwhile ends the next request with "socket hang up".
function post(url, body) {
  const data = JSON.stringify(body);
  return new Promise((res, rej) => {
    const req = request(url, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(data) } }, res);
    req.on("error", rej);
    req.end(data);
  });
}

// --- prompts -------------------------------------------------------------

// Deterministic text: words drawn from a fixed list by a SplitMix64 stream,
// so every server and every run reads the same prompt.
const WORDS = ("the a of to and in is was for on that with as it at by from this be or are an which one " +
  "had not but were they have their all there when would what so if out up about into time people year " +
  "river stone market window garden letter engine silver bridge winter forest harbor signal doctor " +
  "village paper copper lantern shadow meadow castle ribbon thunder candle pocket ladder island " +
  "quietly slowly bright early heavy gentle narrow hollow distant golden crooked patient").split(" ");
function words(n, seed) {
  let s = BigInt(seed) & 0xffffffffffffffffn;
  const out = [];
  for (let i = 0; i < n; i++) {
    s = (s + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    z ^= z >> 31n;
    out.push(WORDS[Number(z % BigInt(WORDS.length))]);
  }
  return out.join(" ");
}

// tokensPerWord asks the first server how many prompt tokens a sample of
// words makes, so a prompt of about N tokens can be built for this model's
// tokenizer; each result still reports the count the server gave.
let perWord;
async function tokensPerWord(e) {
  if (perWord) return perWord;
  const n = 400;
  const r = await complete(e, words(n, 12345), 1);
  perWord = r.promptTokens ? r.promptTokens / n : 1;
  log(`tokenizer: ${perWord.toFixed(3)} prompt tokens per word (${e.name})`);
  return perWord;
}
const textOf = async (e, ntok, seed) => words(Math.max(1, Math.round(ntok / (await tokensPerWord(e)))), seed);

const CODE = `function updateInventory(items, changes) {
  const result = [];
  for (const item of items) {
    const change = changes.find((c) => c.id === item.id);
    if (change) {
      result.push({ id: item.id, name: item.name, count: item.count + change.delta, price: item.price });
    } else {
      result.push({ id: item.id, name: item.name, count: item.count, price: item.price });
    }
  }
  return result.filter((item) => item.count > 0);
}

function totalValue(items) {
  let total = 0;
  for (const item of items) {
    total += item.count * item.price;
  }
  return total;
}
`;
const specPrompt = `Rename the field count to quantity everywhere in this code and print the whole file again.\n\n${CODE}\nThe same code with count renamed to quantity:\n\n`;

// --- statistics ----------------------------------------------------------

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = sorted(xs);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const order = (engines, r) => (r % 2 ? [...engines].reverse() : engines);
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");

// gaps lists each stream's inter-token gaps (after its first token) as
// [from, to] intervals.
const gaps = (runs) => runs.flatMap((r) => r.times.slice(1).map((t, i) => [r.times[i], t]));

// --- modes ---------------------------------------------------------------

async function throughput(engines) {
  const rows = [];
  for (const n of levels) {
    for (const e of engines) if (e.kind === "llama") await startLlama(e, n, tokens + 256);
    for (const e of engines) await complete(e, "Warm-up: once upon a time", 8);
    const rec = new Map(engines.map((e) => [e, { tps: [], ttft: [] }]));
    for (let r = 0; r < rounds; r++) {
      for (const e of order(engines, r)) {
        log(`throughput: ${n} streams, round ${r + 1}/${rounds}: ${e.name}`);
        const t0 = performance.now();
        const runs = await Promise.all(Array.from({ length: n }, (_, k) => complete(e, `Story ${r * 100 + k}: once upon a time`, tokens)));
        const s = (performance.now() - t0) / 1000;
        rec.get(e).tps.push(runs.reduce((a, x) => a + x.tokens, 0) / s);
        rec.get(e).ttft.push(median(runs.map((x) => x.ttft)));
      }
    }
    for (const e of engines) rows.push({ engine: e.name, streams: n, tps: median(rec.get(e).tps), ttft_ms: median(rec.get(e).ttft) });
  }
  return { mode: "throughput", tokens, rounds, rows };
}

async function interference(engines) {
  const rows = [];
  const perSlot = longPrompt + 2 * tokens + 256;
  for (const e of engines) if (e.kind === "llama") await startLlama(e, streams + 1, perSlot);
  const rec = new Map(engines.map((e) => [e, { alone: [], during: [], duringMax: [], longTtft: [], longTokens: [] }]));
  for (let r = 0; r < rounds; r++) {
    const long = await textOf(engines[0], longPrompt, 777 + r);
    for (const e of order(engines, r)) {
      log(`interference: ${streams} streams, round ${r + 1}/${rounds}: ${e.name}`);
      const alone = await Promise.all(Array.from({ length: streams }, (_, k) => complete(e, `Story ${r * 100 + k}: once upon a time`, tokens)));
      // The long prompt is sent once every stream has three tokens, so it
      // arrives while all of them are decoding.
      let ready = 0, arrive;
      const arrived = new Promise((res) => { arrive = res; });
      const running = Array.from({ length: streams }, (_, k) => complete(e, `Story ${r * 100 + 50 + k}: once upon a time`, tokens,
        (c) => { if (c === 3 && ++ready === streams) arrive(); }));
      await Promise.race([arrived, Promise.all(running)]);
      const lr = await complete(e, long, 1);
      const lEnd = lr.times[0] ?? lr.end;
      const during = (await Promise.all(running)).flatMap((x) => gaps([x])).filter(([a, b]) => b > lr.t0 && a < lEnd).map(([a, b]) => b - a);
      const g = rec.get(e);
      g.alone.push(pct(gaps(alone).map(([a, b]) => b - a), 99));
      g.during.push(pct(during, 99));
      g.duringMax.push(Math.max(...during));
      g.longTtft.push(lEnd - lr.t0);
      g.longTokens.push(lr.promptTokens);
    }
  }
  for (const e of engines) {
    const g = rec.get(e);
    rows.push({
      engine: e.name, streams, itl_p99_ms: median(g.alone), itl_p99_during_ms: median(g.during),
      ratio: median(g.during) / median(g.alone), itl_max_during_ms: median(g.duringMax),
      long_prompt_tokens: median(g.longTokens), long_ttft_ms: median(g.longTtft),
    });
  }
  return { mode: "interference", tokens, rounds, rows };
}

async function multiturn(engines) {
  for (const e of engines) if (e.kind === "llama") await startLlama(e, 1, ctx);
  const rec = new Map(engines.map((e) => [e, { first: [], last: [], cached: [], prompt: [] }]));
  for (let r = 0; r < rounds; r++) {
    // A new system prompt each round, so the first turn is never cached.
    const system = `System: ${await textOf(engines[0], systemTokens, 1000 + r)}\n`;
    for (const e of order(engines, r)) {
      log(`multiturn: ${turns} turns, round ${r + 1}/${rounds}: ${e.name}`);
      let history = system, last;
      const ttfts = [];
      for (let k = 1; k <= turns; k++) {
        history += `User: question ${k}: ${words(12, 5000 + 100 * r + k)}?\nAssistant:`;
        last = await complete(e, history, turnTokens);
        ttfts.push(last.ttft);
        history += `${last.text}\n`;
      }
      const g = rec.get(e);
      g.first.push(ttfts[0]);
      g.last.push(ttfts[turns - 1]);
      g.cached.push(last.cached ?? NaN);
      g.prompt.push(last.promptTokens ?? NaN);
    }
  }
  const rows = engines.map((e) => {
    const g = rec.get(e);
    return {
      engine: e.name, turns, ttft_first_ms: median(g.first), ttft_last_ms: median(g.last),
      ratio: median(g.last) / median(g.first), last_prompt_tokens: median(g.prompt), last_cached_tokens: median(g.cached),
    };
  });
  return { mode: "multiturn", system_tokens: systemTokens, turn_tokens: turnTokens, rounds, rows };
}

// decodeRate is one stream's tokens per second after its first token.
const decodeRate = (x) => (x.tokens - 1) / (((x.times.at(-1) ?? x.end) - (x.times[0] ?? x.t0)) / 1000);

async function specRun(engines, label) {
  const rec = new Map(engines.map((e) => [e, { tps: [], drafted: [], accepted: [], text: "" }]));
  for (let r = 0; r < rounds; r++) {
    for (const e of order(engines, r)) {
      log(`speculative (${label}), round ${r + 1}/${rounds}: ${e.name}`);
      const x = await complete(e, specPrompt, tokens);
      const g = rec.get(e);
      g.tps.push(decodeRate(x));
      g.drafted.push(x.timings?.draft_n ?? NaN);
      g.accepted.push(x.timings?.draft_n_accepted ?? NaN);
      g.text = x.text;
    }
  }
  return rec;
}

// writeSpecCard writes a custom card for the imported model that turns on
// prompt-lookup drafting (runtime.speculative = "lookup"): the import's card
// with that one field added, as TOML (the card's JSON and TOML names agree).
function writeSpecCard(e) {
  const card = { ...e.card, runtime: { ...(e.card.runtime ?? {}), speculative: "lookup" } };
  delete card.builtin;
  const val = (v) => (Array.isArray(v) ? `[${v.map(val).join(", ")}]` : typeof v === "string" ? JSON.stringify(v) : String(v));
  const lines = [];
  for (const [k, v] of Object.entries(card)) if (k !== "runtime" && v !== null && typeof v !== "object" || Array.isArray(v)) lines.push(`${k} = ${val(v)}`);
  lines.push("", "[runtime]");
  for (const [k, v] of Object.entries(card.runtime)) lines.push(`${k} = ${val(v)}`);
  const dir = join(e.home, "custom_model_cards");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${e.model}.toml`), lines.join("\n") + "\n");
}

async function speculative(engines) {
  for (const e of engines) if (e.kind === "llama") await startLlama(e, 1, ctx);
  const plain = await specRun(engines, "off");
  const skipped = {};
  const on = [];
  for (const e of engines) {
    if (e.kind === "llama") {
      await startLlama(e, 1, ctx, opt["spec-args"].split(/\s+/).filter(Boolean));
      on.push(e);
      continue;
    }
    // skulk: restart with the card; a binary whose card format has no
    // runtime.speculative refuses the card (strict decoding) or drops it.
    await stop(e);
    let why;
    if (!e.card) why = "the model's card is unknown (it was imported before this run)";
    else {
      writeSpecCard(e);
      try {
        await startSkulk(e);
        const m = await call(e.base, "GET", "/models");
        const list = Array.isArray(m) ? m : m.data ?? m.models ?? [];
        const entry = list.find((x) => (x.model_id ?? x.id) === e.model);
        const rt = entry?.runtime ?? entry?.card?.runtime;
        if (rt?.speculative !== "lookup") why = "this binary does not know runtime.speculative (its catalog does not show it on the card)";
      } catch (err) {
        why = `this binary refused the card with runtime.speculative: ${err.message.split("\n")[0]}`;
      }
    }
    if (why) {
      skipped[e.name] = why;
      log(`speculative: ${e.name}: skipped: ${why}`);
      continue;
    }
    on.push(e);
  }
  const spec = on.length ? await specRun(on, "on") : new Map();
  const rows = engines.map((e) => {
    const p = plain.get(e), s = spec.get(e);
    return {
      engine: e.name, tps_plain: median(p.tps), tps_spec: s ? median(s.tps) : NaN,
      ratio: s ? median(s.tps) / median(p.tps) : NaN,
      drafted: s ? median(s.drafted) : NaN, accepted: s ? median(s.accepted) : NaN,
      same_text: s ? s.text === p.text : null, skipped: skipped[e.name],
    };
  });
  return { mode: "speculative", tokens, rounds, llama_spec_args: opt["spec-args"], rows };
}

// --- report --------------------------------------------------------------

function print(res) {
  const w = Math.max(...res.rows.map((r) => r.engine.length), 12);
  const line = (cells) => console.log("  " + cells.map((c, i) => (i === 0 ? String(c).padEnd(w) : String(c).padStart(14))).join(" "));
  switch (res.mode) {
  case "throughput": {
    console.log(`throughput: ${tokens} tokens per stream, ${opt.threads} threads, medians of ${rounds} rounds, servers alternating`);
    line(["server", "streams", "total t/s", "TTFT ms", "×own 1-stream"]);
    for (const r of res.rows) {
      const one = res.rows.find((x) => x.engine === r.engine && x.streams === 1);
      line([r.engine, r.streams, f(r.tps), f(r.ttft_ms, 0), one ? f(r.tps / one.tps, 2) : "-"]);
    }
    const llama = res.rows.filter((r) => r.engine.startsWith("llama-server"));
    if (llama.length) {
      for (const r of res.rows.filter((x) => !x.engine.startsWith("llama-server"))) {
        const l = llama.find((x) => x.streams === r.streams);
        console.log(`  ${r.engine} / llama-server at ${r.streams} streams: ${f(r.tps / l.tps, 3)}`);
      }
    }
    break;
  }
  case "interference":
    console.log(`interference: ${streams} streams of ${tokens} tokens, a ${longPrompt}-token prompt arrives; medians of ${rounds} rounds`);
    line(["server", "ITL p99 ms", "p99 during", "during/alone", "max during", "long TTFT ms"]);
    for (const r of res.rows) line([r.engine, f(r.itl_p99_ms), f(r.itl_p99_during_ms), f(r.ratio, 2), f(r.itl_max_during_ms), `${f(r.long_ttft_ms, 0)} (${r.long_prompt_tokens} tok)`]);
    break;
  case "multiturn":
    console.log(`multiturn: ${turns} turns, ~${systemTokens}-token system prompt, ${turnTokens} tokens per answer; medians of ${rounds} rounds`);
    line(["server", "TTFT turn 1", `TTFT turn ${turns}`, "last/first", "last prompt", "cached"]);
    for (const r of res.rows) line([r.engine, f(r.ttft_first_ms, 0), f(r.ttft_last_ms, 0), f(r.ratio, 3), f(r.last_prompt_tokens, 0), f(r.last_cached_tokens, 0)]);
    break;
  case "speculative":
    console.log(`speculative: code-edit prompt, ${tokens} tokens, one stream, decode t/s; medians of ${rounds} rounds; llama-server ${opt["spec-args"]}`);
    line(["server", "plain t/s", "spec t/s", "spec/plain", "drafted", "accepted", "same text"]);
    for (const r of res.rows) {
      line([r.engine, f(r.tps_plain), f(r.tps_spec), f(r.ratio, 2), f(r.drafted, 0), f(r.accepted, 0), r.same_text === null ? "-" : String(r.same_text)]);
      if (r.skipped) console.log(`    ${r.engine}: skipped: ${r.skipped}`);
    }
    break;
  }
}

const engines = (opt.skulk?.length ? opt.skulk : (opt["llama-server"] ? [] : ["skulk"])).map(skulkEngine);
if (opt["llama-server"]) engines.push(llamaEngine(resolve(opt["llama-server"])));
const results = [];
let failed = false;
try {
  for (const e of engines) if (e.kind === "skulk") await startSkulk(e);
  for (const m of modes) {
    const res = await { throughput, interference, multiturn, speculative }[m](engines);
    results.push(res);
    if (!opt.json) print(res);
  }
  if (opt.json) console.log(JSON.stringify({ model, threads: Number(opt.threads), slots, ctx, results }));
} catch (err) {
  failed = true;
  console.error(`serve.mjs: ${err.message}`);
  for (const e of engines) {
    if (e.kind === "llama" && e.log) {
      try {
        console.error(`--- last lines of ${e.log}:\n${readFileSync(e.log, "utf8").split("\n").slice(-15).join("\n")}`);
      } catch { /* no log yet */ }
    }
  }
} finally {
  for (const e of engines) await stop(e);
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

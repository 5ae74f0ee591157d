// serve.mjs measures a whole node under concurrent clients: it starts one
// `skulk run` per binary given (a private home and loopback ports each),
// imports MODEL, places it, and then, round by round and binary by binary,
// sends one completion alone and CONCURRENCY completions at once (greedy,
// up to TOKENS tokens each, a different prompt each), printing the
// aggregate completion tokens per second (the tokens the node reports
// generating), medians over the rounds.
//
//   node bench/serve.mjs --model FILE [--skulk BIN]... [--concurrency 4]
//       [--tokens 64] [--rounds 3] [--threads 2] [--json]
//
// With two binaries (say, before and after a change) it prints their
// ratio too. Standard library only: Node's fetch and child_process.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    model: { type: "string" },
    skulk: { type: "string", multiple: true },
    concurrency: { type: "string", default: "4" },
    tokens: { type: "string", default: "64" },
    rounds: { type: "string", default: "3" },
    threads: { type: "string", default: "2" },
    json: { type: "boolean", default: false },
  },
});
if (!opt.model) {
  console.error("usage: node bench/serve.mjs --model FILE [--skulk BIN]... [--concurrency N] [--tokens N] [--rounds N] [--threads N] [--json]");
  process.exit(2);
}
const binaries = opt.skulk?.length ? opt.skulk : ["skulk"];
const model = resolve(opt.model); // a node imports only absolute paths under its import directories
const concurrency = Number(opt.concurrency), tokens = Number(opt.tokens), rounds = Number(opt.rounds);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function call(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// start runs a node and resolves to its base URL once it answers.
async function start(bin, i) {
  const home = mkdtempSync(join(tmpdir(), "skulk-serve-bench-"));
  const port = 40000 + Math.floor(Math.random() * 20000);
  const child = spawn(bin, [
    "run", "--home", home, "--api-addr", `127.0.0.1:${port}`, "--gossip-addr", "127.0.0.1:0",
    "--quic-addr", "127.0.0.1:0", "--no-mdns", "--offline", "--threads", opt.threads, "--log-level", "warn",
  ], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, SKULK_IMPORT_DIRS: dirname(model) } });
  const base = `http://127.0.0.1:${port}`;
  for (let t = 0; t < 200; t++) {
    try {
      await call(base, "GET", "/state");
      break;
    } catch {
      await sleep(100);
    }
  }
  await call(base, "POST", "/models/import", { path: model, id: "bench" });
  const { instance_id: inst } = await call(base, "POST", "/place_instance", { model_id: "bench" });
  for (let t = 0; ; t++) {
    const s = await call(base, "GET", "/state");
    if (s.instances?.[inst]?.status === "ready") break;
    if (t > 1200) throw new Error(`${bin}: the instance never became ready`);
    await sleep(100);
  }
  return { bin, i, base, child, home };
}

async function completion(base, k) {
  const r = await call(base, "POST", "/v1/completions", {
    model: "bench", prompt: `Story ${k}: once upon a time`, max_tokens: tokens, temperature: 0,
  });
  return r.usage.completion_tokens;
}

// measure returns completion tokens per second of n requests at once.
async function measure(base, n, round) {
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: n }, (_, k) => completion(base, round * 100 + k)));
  const s = (performance.now() - t0) / 1000;
  return counts.reduce((a, b) => a + b, 0) / s;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const nodes = [];
try {
  for (const [i, bin] of binaries.entries()) nodes.push(await start(bin, i));
  for (const n of nodes) await measure(n.base, 1, 99); // warm-up
  const rates = nodes.map(() => ({ one: [], many: [] }));
  for (let r = 0; r < rounds; r++) {
    for (const [i, n] of nodes.entries()) {
      console.error(`round ${r + 1}/${rounds}: ${n.bin}`);
      rates[i].one.push(await measure(n.base, 1, r));
      rates[i].many.push(await measure(n.base, concurrency, r));
    }
  }
  const out = nodes.map((n, i) => ({
    skulk: n.bin, alone_tps: median(rates[i].one), concurrent_tps: median(rates[i].many),
    concurrency, tokens, rounds,
  }));
  if (opt.json) {
    console.log(JSON.stringify(out.length === 2 ? { engines: out, concurrent_ratio: out[1].concurrent_tps / out[0].concurrent_tps } : { engines: out }));
  } else {
    console.log(`${opt.model}: ${tokens} tokens per request, ${opt.threads} threads, medians of ${rounds} rounds, binaries alternating`);
    console.log(`  ${"skulk".padEnd(40)} ${"1 client t/s".padStart(14)} ${`${concurrency} clients t/s`.padStart(16)}`);
    for (const o of out) {
      console.log(`  ${o.skulk.padEnd(40)} ${o.alone_tps.toFixed(1).padStart(14)} ${o.concurrent_tps.toFixed(1).padStart(16)}`);
    }
    if (out.length === 2) {
      console.log(`  ${"second/first".padEnd(40)} ${(out[1].alone_tps / out[0].alone_tps).toFixed(3).padStart(14)} ${(out[1].concurrent_tps / out[0].concurrent_tps).toFixed(3).padStart(16)}`);
    }
  }
} finally {
  for (const n of nodes) {
    n.child.kill("SIGTERM");
  }
  await sleep(500);
  for (const n of nodes) rmSync(n.home, { recursive: true, force: true });
}

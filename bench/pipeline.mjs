// pipeline.mjs is bench/pipeline.sh's load: it imports MODEL on every node
// given, places it whole on the single node and split in two (min_nodes 2)
// on the pipeline pair, and then, round by round, alternating between the
// two: single-stream decode tokens/s, aggregate decode tokens/s at 4 and 8
// concurrent streams, and the time to first token of a 1024-token prompt
// (a max_tokens 1 request, so prefill plus one step). It prints medians,
// the pipeline/single ratios, the per-hop latency the pipeline's nodes
// report for the instance's edges (/v1/diagnostics/cluster) and a raw TCP
// ping-pong of one hidden row between the two stage namespaces.
//
//   node bench/pipeline.mjs --model FILE --pipeline URL,URL --single URL
//       [--key KEY] [--rounds 3] [--tokens 96] [--ping-ns NS1,NS2
//       --ping-addr ADDR] [--json]
//
// Standard library only: Node's fetch, net and child_process (and bench/lib.mjs).
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { aggregate as agg, api, median, stream as streamOf, until } from "./lib.mjs";

const { values: opt } = parseArgs({
  options: {
    model: { type: "string" },
    pipeline: { type: "string" },
    single: { type: "string" },
    key: { type: "string", default: "" },
    rounds: { type: "string", default: "3" },
    tokens: { type: "string", default: "96" },
    "prompt-tokens": { type: "string", default: "1024" },
    "ping-ns": { type: "string", default: "" },
    "ping-addr": { type: "string", default: "" },
    modes: { type: "string", default: "decode,ttft" },
    json: { type: "boolean", default: false },
  },
});
const modes = new Set(opt.modes.split(","));
if (!opt.model || !opt.pipeline || !opt.single) {
  console.error("usage: node bench/pipeline.mjs --model FILE --pipeline URL,URL --single URL [--key KEY] [--rounds N] [--json]");
  process.exit(2);
}
const pipe = opt.pipeline.split(","), single = opt.single;
const rounds = Number(opt.rounds), tokens = Number(opt.tokens), promptTokens = Number(opt["prompt-tokens"]);
const log = (...a) => console.error(...a);
const call = api(opt.key);
const stream = (base, k, n) => streamOf(base, opt.key, "bench", k, n);
const aggregate = (base, n, round) => agg(base, opt.key, "bench", n, tokens, round);

async function placed(base, body) {
  const { instance_id: inst } = await call(base, "POST", "/place_instance", { model_id: "bench", ...body });
  const ranks = await until(`instance ${inst} ready`, async () => {
    const s = await call(base, "GET", "/state");
    const i = s.instances?.[inst];
    return i?.status === "ready" && i.placement.map((p) => p.node);
  }, 600);
  return { inst, ranks };
}

// longPrompt finds a text of about promptTokens tokens for this model.
async function longPrompt(base) {
  const words = (m) => Array.from({ length: m }, (_, i) => `w${(i * 7919) % 997}`).join(" ");
  let m = Math.max(1, promptTokens >> 3); // words tokenize to one or more tokens: start low
  for (let i = 0; i < 4; i++) {
    const r = await call(base, "POST", "/v1/completions", { model: "bench", prompt: words(m), max_tokens: 1, temperature: 0 });
    const got = r.usage.prompt_tokens;
    if (Math.abs(got - promptTokens) <= 8) break;
    m = Math.max(1, Math.floor(m * promptTokens / got));
  }
  return words(m);
}

// ttft times one prompt; each call's prompt starts with a different word,
// so no prefix cache can serve any of it (a node keeps finished prompts'
// KV and would read only the last token of a repeated one).
let ttftCalls = 0;
async function ttft(base, text) {
  const prompt = `r${++ttftCalls}x ${text}`;
  const t0 = performance.now();
  const r = await call(base, "POST", "/v1/completions", { model: "bench", prompt, max_tokens: 1, temperature: 0 });
  return { ms: performance.now() - t0, prompt: r.usage.prompt_tokens };
}

// ping measures a raw TCP ping-pong of `bytes` between two namespaces:
// a node echo server in ns[1], a client in ns[0]; one-way = RTT / 2.
async function ping(nss, addr, bytes, count) {
  const server = `require("net").createServer(s=>s.pipe(s)).listen(52499,"${addr}",()=>console.log("up"))`;
  const client = `const net=require("net");const b=Buffer.alloc(${bytes},7);const s=net.connect(52499,"${addr}",async()=>{s.setNoDelay(true);const rtt=[];for(let i=0;i<${count};i++){const t=process.hrtime.bigint();s.write(b);let got=0;await new Promise(r=>{const f=d=>{got+=d.length;if(got>=${bytes}){s.off("data",f);r()}};s.on("data",f)});rtt.push(Number(process.hrtime.bigint()-t)/1e6)}rtt.sort((a,b)=>a-b);console.log(JSON.stringify({p50:rtt[rtt.length>>1]/2,p99:rtt[Math.floor(rtt.length*0.99)]/2}));s.destroy()})`;
  const srv = spawn("ip", ["netns", "exec", nss[1], "node", "-e", server], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((r) => srv.stdout.once("data", r));
  try {
    const cl = spawn("ip", ["netns", "exec", nss[0], "node", "-e", client], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    cl.stdout.on("data", (d) => (out += d));
    await new Promise((r) => cl.on("close", r));
    return JSON.parse(out);
  } finally {
    srv.kill();
  }
}

// edges collects the edge entries of /v1/diagnostics/cluster (any object
// carrying hop latency percentiles), wherever the document nests them.
function edges(doc) {
  const out = [];
  const walk = (v) => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v && typeof v === "object") {
      const keys = Object.keys(v);
      if (keys.some((k) => /p50/i.test(k)) && keys.some((k) => /p99/i.test(k))) out.push(v);
      else Object.values(v).forEach(walk);
    }
  };
  walk(doc);
  return out;
}

const nodes = [...pipe, single];
for (const b of nodes) await until(`${b} answers`, () => call(b, "GET", "/state"), 120);
await until("the pipeline pair joined", async () => {
  const s = await call(pipe[0], "GET", "/state");
  if (Object.keys(s.nodes ?? {}).length !== 2) throw new Error(`members ${JSON.stringify(s.nodes)}`);
  return true;
}, 120);
for (const b of nodes) await call(b, "POST", "/models/import", { path: opt.model, id: "bench" });
log("placing: whole on the single node, split in two on the pair");
const one = await placed(single, {});
const two = await placed(pipe[0], { min_nodes: 2 });
// Requests go to rank 0's node, as a client of the node holding rank 0 would.
const st = await call(pipe[0], "GET", "/state");
let pipeBase = pipe[0];
for (const b of pipe) if ((await call(b, "GET", "/v1/diagnostics/node")).nodeId === two.ranks[0]) pipeBase = b;
log(`split instance ${two.inst}: ranks on ${two.ranks.join(", ")}; requests to ${pipeBase}; ${st.instances[two.inst].placement.map((p) => JSON.stringify(p.layers ?? p)).join(" ")}`);

// Only the TTFT rows need the long prompt (finding it prefills ~1024 tokens up to four times).
const prompt = modes.has("ttft") ? await longPrompt(single) : "";
for (const b of [single, pipeBase]) await stream(b, 999, 8); // warm-up

const fig = { single: { decode: [], c4: [], c8: [], ttft: [] }, pipeline: { decode: [], c4: [], c8: [], ttft: [] } };
let promptLen = 0;
for (let r = 0; r < rounds; r++) {
  for (const [name, base] of r % 2 ? [["pipeline", pipeBase], ["single", single]] : [["single", single], ["pipeline", pipeBase]]) {
    log(`round ${r + 1}/${rounds}: ${name}`);
    if (modes.has("decode")) {
      fig[name].decode.push((await stream(base, r, tokens)).decode);
      fig[name].c4.push(await aggregate(base, 4, r));
      fig[name].c8.push(await aggregate(base, 8, r));
    }
    if (modes.has("ttft")) {
      const t = await ttft(base, prompt);
      promptLen = t.prompt;
      fig[name].ttft.push(t.ms);
    }
  }
}
const med = (name) => Object.fromEntries(Object.entries(fig[name]).filter(([, v]) => v.length).map(([k, v]) => [k, median(v)]));
const s = med("single"), p = med("pipeline");
// Every node's diagnostics list the cluster's edges: keep one per link.
const hop = [];
const seen = new Set();
for (const b of pipe) {
  try {
    for (const e of edges(await call(b, "GET", "/v1/diagnostics/cluster"))) {
      const key = `${e.instance}/${e.link}`;
      if (!seen.has(key)) hop.push(e), seen.add(key);
    }
  } catch {}
}
const tcp = opt["ping-ns"] ? await ping(opt["ping-ns"].split(","), opt["ping-addr"], 4 * 2048, 2000) : null;
const out = {
  model: opt.model, rounds, tokens, prompt_tokens: promptLen, single: s, pipeline: p,
  ratios: Object.fromEntries(Object.keys(s).map((k) => [k, p[k] / s[k]])),
  edges: hop, tcp_one_way_ms: tcp,
};
if (opt.json) {
  console.log(JSON.stringify(out));
} else {
  const row = (k, label, unit, d = 1) => k in s && console.log(`  ${label.padEnd(34)} ${s[k].toFixed(d).padStart(10)} ${p[k].toFixed(d).padStart(10)} ${unit.padEnd(6)} ${out.ratios[k].toFixed(3).padStart(7)}`);
  console.log(`${opt.model}: 1 thread per node, each node on its own core; medians of ${rounds} alternating rounds`);
  console.log(`  ${"".padEnd(34)} ${"1 node".padStart(10)} ${"2 stages".padStart(10)} ${"".padEnd(6)} ${"ratio".padStart(7)}`);
  row("decode", "single-stream decode", "t/s");
  row("c4", "aggregate decode, 4 streams", "t/s");
  row("c8", "aggregate decode, 8 streams", "t/s");
  row("ttft", `time to first token, ${promptLen}-token prompt`, "ms", 0);
  for (const e of hop) console.log(`  edge: ${JSON.stringify(e)}`);
  if (tcp) console.log(`  raw TCP one-way, ${4 * 2048}-byte row on the same veth pair: p50 ${tcp.p50.toFixed(3)} ms, p99 ${tcp.p99.toFixed(3)} ms`);
}

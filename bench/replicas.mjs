// replicas.mjs is bench/replicas.sh's load: it imports MODEL on both nodes
// of a two-node cluster, places one replica on node A and then, round by
// round, measures the aggregate decode rate of N concurrent streams sent to
// A's API with that one replica alone and with a second replica on node B
// (placed for the round, excluded from A, and deleted after it), in
// alternating order. The router sends each request to the replica with the
// fewest requests in flight, so two replicas should serve nearly twice one.
//
//   node bench/replicas.mjs --model FILE --nodes URL_A,URL_B [--key KEY]
//       [--rounds 3] [--streams 8] [--tokens 96] [--json]
//
// Standard library only (and bench/lib.mjs).
import { parseArgs } from "node:util";
import { aggregate as agg, api, median, stream as streamOf, until } from "./lib.mjs";

const { values: opt } = parseArgs({
  options: {
    model: { type: "string" },
    nodes: { type: "string" },
    key: { type: "string", default: "" },
    rounds: { type: "string", default: "3" },
    streams: { type: "string", default: "8" },
    tokens: { type: "string", default: "96" },
    json: { type: "boolean", default: false },
  },
});
if (!opt.model || !opt.nodes) {
  console.error("usage: node bench/replicas.mjs --model FILE --nodes URL_A,URL_B [--key KEY] [--rounds N] [--streams N] [--json]");
  process.exit(2);
}
const [a, b] = opt.nodes.split(",");
const rounds = Number(opt.rounds), streams = Number(opt.streams), tokens = Number(opt.tokens);
const log = (...x) => console.error(...x);
const call = api(opt.key);
const stream = (k) => streamOf(a, opt.key, "bench", k, tokens);
const aggregate = (round) => agg(a, opt.key, "bench", streams, tokens, round);

const nodeId = async (base) => (await call(base, "GET", "/v1/diagnostics/node")).nodeId;

async function place(exclude) {
  const { instance_id: inst } = await call(a, "POST", "/place_instance", { model_id: "bench", excluded_nodes: [exclude] });
  const on = await until(`instance ${inst} ready`, async () => {
    const i = (await call(a, "GET", "/state")).instances?.[inst];
    return i?.status === "ready" && i.placement[0].node;
  }, 600);
  return { inst, on };
}

for (const base of [a, b]) await until(`${base} answers`, () => call(base, "GET", "/state"), 120);
await until("the two nodes joined", async () => Object.keys((await call(a, "GET", "/state")).nodes ?? {}).length === 2, 120);
for (const base of [a, b]) await call(base, "POST", "/models/import", { path: opt.model, id: "bench" });
const [idA, idB] = [await nodeId(a), await nodeId(b)];
const first = await place(idB);
if (first.on !== idA) throw new Error(`the first replica went to ${first.on}, not node A ${idA}`);
await stream(999); // warm-up

const fig = { one: [], two: [] };
for (let r = 0; r < rounds; r++) {
  for (const phase of r % 2 ? ["two", "one"] : ["one", "two"]) {
    log(`round ${r + 1}/${rounds}: ${phase === "one" ? "1 replica" : "2 replicas"}`);
    if (phase === "one") {
      fig.one.push(await aggregate(r));
      continue;
    }
    const second = await place(idA);
    if (second.on !== idB) throw new Error(`the second replica went to ${second.on}, not node B ${idB}`);
    await stream(998); // its first request pays for cold caches
    fig.two.push(await aggregate(r));
    await call(a, "DELETE", `/instance/${second.inst}`);
    await until(`instance ${second.inst} gone`, async () => !(await call(a, "GET", "/state")).instances?.[second.inst], 60);
  }
}
const out = { model: opt.model, rounds, streams, tokens, one: median(fig.one), two: median(fig.two), samples: fig };
out.ratio = out.two / out.one;
if (opt.json) {
  console.log(JSON.stringify(out));
} else {
  console.log(`${opt.model}: 1 thread per node, each node on its own core; ${streams} concurrent streams of ${tokens} tokens to node A's API; medians of ${rounds} alternating rounds`);
  console.log(`  1 replica (on A)      ${out.one.toFixed(1).padStart(8)} t/s   rounds ${fig.one.map((x) => x.toFixed(1)).join(", ")}`);
  console.log(`  2 replicas (A and B)  ${out.two.toFixed(1).padStart(8)} t/s   rounds ${fig.two.map((x) => x.toFixed(1)).join(", ")}`);
  console.log(`  ratio                 ${out.ratio.toFixed(3).padStart(8)}`);
}

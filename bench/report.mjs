// report.mjs pools the runs that compare.sh collected (JSON lines from
// `skulk bench --json` and build/llamabench, one line per round) and prints
// the side-by-side table, or with --json one object.
//
// usage: node report.mjs OURS.jsonl LLAMA.jsonl MEMBW.jsonl [--json]
//
// MEMBW.jsonl holds one bench/build/membw -json line per round; the
// ceiling uses the best bandwidth seen, so that a slow moment of a shared
// machine cannot lower it below what the engines could have had.
import { readFileSync } from "node:fs";

const [oursPath, llamaPath, bwPath, flag] = process.argv.slice(2);
const lines = (p) => readFileSync(p, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));

// summarize matches internal/engine/bench.Summarize: the median of an even count is
// the mean of the middle two.
function summarize(runs) {
  const s = [...runs].sort((a, b) => a - b);
  const n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { min: s[0], median, max: s[n - 1], runs };
}

function pool(results) {
  return {
    prefill: summarize(results.flatMap((r) => r.prefill.runs)),
    decode: summarize(results.flatMap((r) => r.decode.runs)),
  };
}

const ours = lines(oursPath);
const llama = lines(llamaPath);
const bws = lines(bwPath);
const best = (key) => Math.max(...bws.map((b) => b[key]));
const bw = { ...bws[0], read_gbps_1: best("read_gbps_1"), read_gbps_n: best("read_gbps_n"), samples: bws.length };
const o = pool(ours);
const l = pool(llama);
const first = ours[0];
const ceiling = (bw.read_gbps_n * 1e9) / first.weight_bytes;
const out = {
  model: first.model,
  threads: first.threads,
  prompt_tokens: first.prompt_tokens,
  gen_tokens: first.gen_tokens,
  rounds: ours.length,
  weight_bytes: first.weight_bytes,
  skulk: { prefill_median: o.prefill.median, decode_median: o.decode.median, ...o },
  llama_cpp: { prefill_median: l.prefill.median, decode_median: l.decode.median, ...l },
  prefill_ratio: o.prefill.median / l.prefill.median,
  decode_ratio: o.decode.median / l.decode.median,
  membw: bw,
  decode_ceiling_tps: ceiling,
};

if (flag === "--json") {
  console.log(JSON.stringify(out));
} else {
  const f = (x) => x.toFixed(x < 100 ? 2 : 1);
  const range = (s) => `${f(s.median)} (${f(s.min)}-${f(s.max)})`;
  const rows = [
    ["engine", "prefill t/s", "decode t/s"],
    ["skulk", range(o.prefill), range(o.decode)],
    ["llama.cpp", range(l.prefill), range(l.decode)],
    ["skulk/llama.cpp", out.prefill_ratio.toFixed(3), out.decode_ratio.toFixed(3)],
  ];
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i].length)));
  console.log(
    `${out.model}: ${(out.weight_bytes / 1e9).toFixed(3)} GB of weights, ${out.threads} threads, ` +
      `pp${out.prompt_tokens} / tg${out.gen_tokens}, medians (min-max) of ${o.decode.runs.length} runs per engine, engines alternating`,
  );
  for (const r of rows) console.log(`  ${r[0].padEnd(w[0])}  ${r[1].padStart(w[1])}  ${r[2].padStart(w[2])}`);
  console.log(
    `  memory bandwidth (best of ${bw.samples}): ${bw.read_gbps_1.toFixed(1)} GB/s with 1 thread, ` +
      `${bw.read_gbps_n.toFixed(1)} GB/s with ${bw.threads}; decode ceiling (weights ÷ bandwidth): ${f(ceiling)} t/s ` +
      `(skulk decode at ${((100 * o.decode.median) / ceiling).toFixed(0)}%)`,
  );
}

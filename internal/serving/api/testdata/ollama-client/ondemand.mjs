// Runs the official ollama npm client against a Skulk node whose model is
// installed but not loaded, and prints one JSON document of what it saw.
// Exits non-zero when Skulk does not behave as Ollama does:
//
//   node ondemand.mjs <host-url> <model> [api-key]
//
// list shows the installed model; ps does not, until a generate loads it on
// demand; ps then lists it with an expiry; a generate with keep_alive 0
// unloads it, and ps stops listing it.
import { Ollama } from "ollama";

const [host, model, keyArg] = process.argv.slice(2);
if (!host || !model) {
  console.error("usage: node ondemand.mjs <host-url> <model> [api-key]");
  process.exit(2);
}
const key = keyArg || process.env.SKULK_API_KEY;
const ollama = new Ollama({ host, headers: key ? { Authorization: `Bearer ${key}` } : undefined });
const options = { num_predict: 8, temperature: 0, seed: 1 };
const out = {};
const fail = (why) => {
  console.log(JSON.stringify(out, null, 2));
  console.error(why);
  process.exit(1);
};
const loaded = async () => (await ollama.ps()).models.filter((m) => m.name === model || m.model === model);

out.list = (await ollama.list()).models.map((m) => m.name);
if (!out.list.includes(model)) fail(`list does not show the installed ${model}`);
out.ps_before = (await loaded()).length;
if (out.ps_before !== 0) fail(`ps lists ${model} before anything loaded it`);

const gen = await ollama.generate({ model, prompt: "Once upon a time", stream: false, options, keep_alive: "10m" });
out.generate = { response: gen.response, done: gen.done, done_reason: gen.done_reason, eval_count: gen.eval_count };
if (!gen.done || !(gen.eval_count > 0)) fail("the generate that loads the model on demand was not answered");

const ps = await loaded();
out.ps_after = ps.map((m) => ({ name: m.name, expires_at: m.expires_at }));
if (ps.length !== 1 || !(new Date(ps[0].expires_at).getTime() > Date.now())) fail("ps does not list the loaded model with a future expires_at");

// keep_alive 0, as `ollama stop` sends it: unloaded right after.
const stop = await ollama.generate({ model, prompt: "", keep_alive: 0 });
out.unload = { done: stop.done, done_reason: stop.done_reason ?? null };
const deadline = Date.now() + 15000;
while ((await loaded()).length > 0) {
  if (Date.now() > deadline) fail("ps still lists the model 15 s after keep_alive 0");
  await new Promise((r) => setTimeout(r, 200));
}
out.ps_unloaded = 0;
console.log(JSON.stringify(out, null, 2));

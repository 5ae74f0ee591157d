// Runs the official ollama npm client against a Skulk node and prints one
// JSON document describing what it saw. Exits non-zero if a call fails in a
// way it should not.
//
//   node client.mjs <host-url> <model> [api-key]
//
// host-url is the node's API root (e.g. http://127.0.0.1:52415); the key
// may also come from SKULK_API_KEY. The model must have a ready instance.
// The checks: version, list (tags), show, ps, one non-streamed and one
// streamed chat, one non-streamed and one streamed generate, embed (a 501
// while the node has no embedding backend is recorded, not fatal), and a
// chat with a model that does not exist, which must fail with a 404.
import { Ollama } from "ollama";

const [host, model, keyArg] = process.argv.slice(2);
if (!host || !model) {
  console.error("usage: node client.mjs <host-url> <model> [api-key]");
  process.exit(2);
}
const key = keyArg || process.env.SKULK_API_KEY;
const ollama = new Ollama({ host, headers: key ? { Authorization: `Bearer ${key}` } : undefined });
const messages = [{ role: "user", content: "hello brave new world" }];
const options = { num_predict: 32, temperature: 0, seed: 1 };
const out = {};

// The final line's fields every answer must carry.
const metrics = (r) => ({
  done: r.done,
  done_reason: r.done_reason,
  total_duration: r.total_duration,
  load_duration: r.load_duration,
  prompt_eval_count: r.prompt_eval_count,
  prompt_eval_duration: r.prompt_eval_duration,
  eval_count: r.eval_count,
  eval_duration: r.eval_duration,
});

// Calls that may fail with a status are recorded as {status, error}.
const failure = (e) => {
  if (e?.name !== "ResponseError") throw e;
  return { status: e.status_code, error: e.error };
};

out.version = (await ollama.version()).version;

const tags = await ollama.list();
out.tags = tags.models.map((m) => ({ name: m.name, model: m.model, size: m.size ?? null, details: m.details ?? null }));

const show = await ollama.show({ model });
out.show = {
  details: show.details,
  capabilities: show.capabilities ?? [],
  model_info_keys: Object.keys(show.model_info ?? {}).length,
};

const ps = await ollama.ps();
out.ps = ps.models.map((m) => ({ name: m.name, context_length: m.context_length ?? null }));

const chat = await ollama.chat({ model, messages, stream: false, options });
out.chat = { role: chat.message.role, content: chat.message.content, created_at: chat.created_at, ...metrics(chat) };

const chatStream = await ollama.chat({ model, messages, stream: true, options });
const cs = { lines: 0, content: "", not_done_before_last: true, last: null };
for await (const part of chatStream) {
  cs.lines++;
  cs.content += part.message.content;
  if (cs.last && cs.last.done) cs.not_done_before_last = false;
  cs.last = metrics(part);
}
out.chat_stream = cs;

const gen = await ollama.generate({ model, prompt: "hello brave new world", stream: false, options });
out.generate = { response: gen.response, ...metrics(gen) };

const genStream = await ollama.generate({ model, prompt: "hello brave new world", stream: true, options });
const gs = { lines: 0, response: "", last: null };
for await (const part of genStream) {
  gs.lines++;
  gs.response += part.response;
  gs.last = metrics(part);
}
out.generate_stream = gs;

// Embeddings go to EMBED_MODEL when set (a chat model cannot embed).
try {
  const emb = await ollama.embed({ model: process.env.EMBED_MODEL || model, input: ["hello", "world"] });
  out.embed = { status: 200, count: emb.embeddings.length, dims: emb.embeddings[0]?.length ?? 0 };
  if (emb.embeddings.length !== 2 || !(emb.embeddings[0]?.length > 0)) throw new Error("embed: want two vectors");
} catch (e) {
  out.embed = failure(e);
  // Without an embedding model: a server with no embedding backend (501)
  // or a chat model that cannot embed (400) is recorded, not fatal.
  if (process.env.EMBED_MODEL || (out.embed.status !== 501 && out.embed.status !== 400)) throw e;
}

try {
  await ollama.chat({ model: "no-such-model-for-the-client-check", messages, stream: false });
  out.not_found = { status: 200 };
} catch (e) {
  out.not_found = failure(e);
}

console.log(JSON.stringify(out, null, 2));
if (out.not_found.status !== 404) {
  console.error("a chat with an unknown model did not fail with 404");
  process.exit(1);
}

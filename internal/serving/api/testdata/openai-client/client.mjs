// Runs the official openai npm client against a Skulk API and prints one JSON
// document describing what it saw. Exits non-zero if a call fails in a way
// it should not.
//
//   node client.mjs <base-url> <model> [api-key]
//
// base-url is the API root including /v1 (e.g. http://127.0.0.1:52415/v1);
// the key may also come from SKULK_API_KEY. The model must have a ready
// instance. The checks: list models, one non-streamed and one streamed chat
// completion (with usage), one completion, and a request for a model that
// does not exist, which must fail with a 404.
import OpenAI from "openai";

const [baseURL, model, keyArg] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node client.mjs <base-url> <model> [api-key]");
  process.exit(2);
}
const client = new OpenAI({
  baseURL,
  apiKey: keyArg || process.env.SKULK_API_KEY || "none",
  maxRetries: 0,
  timeout: 120_000,
});
const messages = [{ role: "user", content: "hello brave new world" }];
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const chat = await client.chat.completions.create({ model, messages, max_tokens: 64, temperature: 0 });
out.chat = {
  object: chat.object,
  content: chat.choices[0].message.content,
  finish_reason: chat.choices[0].finish_reason,
  usage: chat.usage,
};

const stream = await client.chat.completions.create({
  model,
  messages,
  max_tokens: 64,
  temperature: 0,
  stream: true,
  stream_options: { include_usage: true },
});
const s = { chunks: 0, role: null, content: "", finish_reason: null, usage: null };
for await (const chunk of stream) {
  s.chunks++;
  const choice = chunk.choices[0];
  if (choice) {
    s.role ??= choice.delta.role ?? null;
    s.content += choice.delta.content ?? "";
    s.finish_reason = choice.finish_reason ?? s.finish_reason;
  }
  if (chunk.usage) s.usage = chunk.usage;
}
out.stream = s;

const completion = await client.completions.create({ model, prompt: "hello brave new world", max_tokens: 64 });
out.completion = { object: completion.object, text: completion.choices[0].text, finish_reason: completion.choices[0].finish_reason };

try {
  await client.chat.completions.create({ model: "skulk-client-check/no-such-model", messages });
  out.not_found = { status: 200 };
} catch (err) {
  if (!(err instanceof OpenAI.APIError)) throw err;
  out.not_found = { status: err.status, type: err.type ?? null, message: err.message };
}

console.log(JSON.stringify(out));
if (out.not_found.status !== 404) {
  console.error(`a request for an unknown model answered ${out.not_found.status}, want 404`);
  process.exit(1);
}

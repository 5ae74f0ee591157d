// Runs the official openai npm client's tool calling and embeddings against
// a live Skulk node and prints one JSON document. Exits non-zero when a
// check fails.
//
//   node tools.mjs <base-url> <chat-model> [embedding-model]
//
// The tool checks force a call (tool_choice naming the function) with a
// bounded argument schema, streamed and not, then feed the tool result
// back through the template. The embedding checks (only with an embedding
// model) ask for float and base64 vectors and compare them.
import OpenAI from "openai";

const [baseURL, model, embedModel] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node tools.mjs <base-url> <chat-model> [embedding-model]");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: process.env.SKULK_API_KEY || "none", maxRetries: 0, timeout: 120_000 });
const failed = [];
const expect = (ok, what) => { if (!ok) failed.push(what); };
const out = {};

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 24 } }, required: ["city"], additionalProperties: false },
  },
}];
const question = { role: "user", content: "What is the weather in Paris?" };
const forced = { type: "function", function: { name: "get_weather" } };

const first = await client.chat.completions.create({ model, messages: [question], tools, tool_choice: forced, max_tokens: 128, temperature: 0 });
const call = first.choices[0].message.tool_calls?.[0];
out.tool_call = { finish_reason: first.choices[0].finish_reason, name: call?.function.name ?? null, arguments: call?.function.arguments ?? null };
expect(first.choices[0].finish_reason === "tool_calls", "tool call: finish_reason tool_calls");
expect(call?.function.name === "get_weather" && typeof JSON.parse(call.function.arguments).city === "string", "tool call: get_weather with a city");

const stream = await client.chat.completions.create({ model, messages: [question], tools, tool_choice: forced, max_tokens: 128, temperature: 0, stream: true });
let name = "", args = "", finish = null;
for await (const chunk of stream) {
  for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
    name += tc.function?.name ?? "";
    args += tc.function?.arguments ?? "";
  }
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
out.tool_call_stream = { name, arguments: args, finish_reason: finish };
expect(name === "get_weather" && finish === "tool_calls" && args === out.tool_call.arguments, "streamed tool call equals the whole one");

const followUp = await client.chat.completions.create({
  model, max_tokens: 32, temperature: 0, tools, tool_choice: "none",
  messages: [question, first.choices[0].message, { role: "tool", tool_call_id: call?.id ?? "call_0", content: '{"temperature": 21}' }],
});
out.follow_up = { finish_reason: followUp.choices[0].finish_reason, content: followUp.choices[0].message.content };
expect(typeof followUp.choices[0].message.content === "string" && !followUp.choices[0].message.tool_calls, "tool result fed back: a text answer");

if (embedModel) {
  const floats = await client.embeddings.create({ model: embedModel, input: ["hello world", "the cat sat"], encoding_format: "float" });
  const b64 = await client.embeddings.create({ model: embedModel, input: ["hello world", "the cat sat"], encoding_format: "base64" });
  out.embeddings = { count: floats.data.length, dims: floats.data[0]?.embedding.length ?? 0, prompt_tokens: floats.usage?.prompt_tokens };
  expect(floats.data.length === 2 && floats.data[0].embedding.length > 0, "embeddings: two vectors");
  const norm = Math.hypot(...floats.data[0].embedding);
  expect(Math.abs(norm - 1) < 1e-3, "embeddings: unit length");
  // openai decodes base64 itself when the caller asked for floats; asking
  // for base64 explicitly hands back the string.
  const raw = Buffer.from(b64.data[0].embedding, "base64");
  const decoded = Array.from({ length: raw.length / 4 }, (_, i) => raw.readFloatLE(4 * i));
  // JSON carries each float32 as its shortest decimal; rounding it back to
  // float32 must give the base64 bytes exactly.
  expect(decoded.length === floats.data[0].embedding.length && decoded.every((v, i) => v === Math.fround(floats.data[0].embedding[i])), "embeddings: base64 equals float");
}

console.log(JSON.stringify(out));
if (failed.length) {
  console.error("failed checks: " + failed.join("; "));
  process.exit(1);
}

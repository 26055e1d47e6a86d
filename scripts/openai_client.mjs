// The official OpenAI Node SDK (v4) against `tokenmix serve`: chat
// completions, streamed and not, completions on the rendered prompt, and
// embeddings (the SDK asks for base64 and decodes it). Prints one JSON
// object; internal/serve's TestOpenAIClient compares it with Model.Chat
// and Model.Embed.
//
//   node scripts/openai_client.mjs URL MODEL MODULES EMBEDDER   (MODULES: a node_modules with openai@4)
import { createRequire } from "node:module";

const [url, model, modules, embedder] = process.argv.slice(2);
const require = createRequire(modules.replace(/\/?$/, "/"));
const OpenAI = require("openai").default ?? require("openai");
const client = new OpenAI({ baseURL: url + "/v1", apiKey: "unused", maxRetries: 0 });

const messages = [{ role: "system", content: "be" }, { role: "user", content: "The quick" }];
const params = { model, messages, max_tokens: 12, temperature: 0.8, seed: 7 };

const chat = await client.chat.completions.create({ ...params, logprobs: true, top_logprobs: 1 });
let streamed = "", finish = null, usage = null, role = null;
const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    role ??= c.delta.role ?? null;
    streamed += c.delta.content ?? "";
    finish = c.finish_reason ?? finish;
  }
  usage = chunk.usage ?? usage;
}
const prompt = "<|system|>\nbe\n<|user|>\nThe quick\n<|assistant|>\n";
const completion = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0.8, seed: 7, stop: ["\n<|"] });
const models = await client.models.list();
const emb = await client.embeddings.create({ model: embedder, input: ["alpha bravo", "kilo"] });
console.log(JSON.stringify({
  chat: chat.choices[0].message.content,
  role: chat.choices[0].message.role,
  finish: chat.choices[0].finish_reason,
  logprobs: chat.choices[0].logprobs.content.map((t) => t.logprob),
  usage: chat.usage,
  streamed, streamRole: role, streamFinish: finish, streamUsage: usage,
  completion: completion.choices[0].text,
  models: models.data.map((m) => [m.id, m.task]),
  embeddings: emb.data.map((d) => Array.from(d.embedding)),
  embeddingTokens: emb.usage.prompt_tokens,
}));

// One call through an SDK as its users write it, for tools/clients-check:
// the client built from the environment alone (base URL and key variables
// that `keyshim run` sets), a streamed "say pong", the text printed.
//
// Usage: node sdk-call.mjs openai|anthropic   (NODE_PATH must find the SDKs)
import { createRequire } from "node:module";

const require = createRequire(process.env.NODE_PATH + "/");

async function openai() {
  const OpenAI = require("openai");
  const client = new OpenAI();
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "say pong" }],
  });
  for await (const chunk of stream) {
    process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
  }
  const response = await client.responses.create({ model: "gpt-4o-mini", input: "say pong" });
  process.stdout.write("\n" + response.output_text + "\n");
}

async function anthropic() {
  const Anthropic = require("@anthropic-ai/sdk");
  const client = new (Anthropic.default ?? Anthropic)();
  const stream = client.messages.stream({
    model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "say pong" }],
  });
  stream.on("text", (text) => process.stdout.write(text));
  await stream.finalMessage();
  process.stdout.write("\n");
}

await { openai, anthropic }[process.argv[2]]();

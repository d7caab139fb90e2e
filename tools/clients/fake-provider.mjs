// The fake provider tools/clients-check runs the real tools against: one
// loopback HTTP server that speaks just enough of each API to answer a
// one-turn prompt with REPLY, and logs every request it gets (method, path,
// the key each auth style carries) as one JSON line to LOG.
//
//   OpenAI:    POST …/chat/completions (JSON or SSE), POST …/responses (JSON
//              or SSE), and the Responses WebSocket (GET …/responses with
//              Upgrade) that Codex opens first: one JSON text message per
//              event, response.created … response.completed with usage.
//   Anthropic: POST …/messages (JSON or SSE), …/messages/count_tokens.
//   Gemini:    POST …:generateContent, …:streamGenerateContent?alt=sse,
//              …:countTokens.
//   A GET …/responses without Upgrade: 404, as OpenAI answers it. Anything
//   else (HEAD probes, GET /): 200 {} so a tool's start-up goes on; it is
//   logged all the same.
//
// Usage: node fake-provider.mjs LOG   (NODE_PATH must find `ws`)
// Prints "listening PORT" on stdout once it accepts connections.
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(process.env.NODE_PATH + "/");
const { WebSocketServer } = require("ws");

export const REPLY = "pong-from-the-fake-provider";
const log = fs.openSync(process.argv[2], "a");

function keys_of(req, url) {
  const bearer = (req.headers["authorization"] || "").replace(/^Bearer\s+/i, "");
  return {
    bearer: bearer || undefined,
    x_api_key: req.headers["x-api-key"],
    x_goog_api_key: req.headers["x-goog-api-key"],
    query_key: url.searchParams.get("key") || undefined,
  };
}

function record(req, url, extra = {}) {
  const line = { method: req.method, path: url.pathname, ...keys_of(req, url), ...extra };
  fs.writeSync(log, JSON.stringify(line) + "\n");
}

function send_json(res, body, status = 200) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function open_sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
}

// ---- OpenAI Responses: the same events over SSE and over the WebSocket.
let next_id = 1;
function response_events(model, generate) {
  const id = `resp_fake_${next_id++}`;
  const item_id = `msg_fake_${next_id++}`;
  const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "in_progress", output: [] };
  const usage = {
    input_tokens: 5, input_tokens_details: { cached_tokens: 0 },
    output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 8,
  };
  const part = { type: "output_text", text: REPLY, annotations: [] };
  const item = { id: item_id, type: "message", role: "assistant", status: "completed", content: [part] };
  const events = [{ type: "response.created", response: base }];
  if (generate) {
    const at = { item_id, output_index: 0, content_index: 0 };
    events.push(
      { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } },
      { type: "response.content_part.added", ...at, part: { ...part, text: "" } },
      { type: "response.output_text.delta", ...at, delta: REPLY },
      { type: "response.output_text.done", ...at, text: REPLY },
      { type: "response.content_part.done", ...at, part },
      { type: "response.output_item.done", output_index: 0, item },
    );
  }
  events.push({
    type: "response.completed",
    response: { ...base, status: "completed", output: generate ? [item] : [], usage },
  });
  return events.map((event, n) => ({ ...event, sequence_number: n }));
}

function answer_responses(res, body) {
  const events = response_events(body.model || "fake", true);
  if (!body.stream) {
    return send_json(res, events[events.length - 1].response);
  }
  open_sse(res);
  for (const event of events) {
    res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  }
  res.end();
}

// ---- OpenAI chat completions.
function answer_chat(res, body) {
  const common = { id: "chatcmpl-fake", created: Math.floor(Date.now() / 1000), model: body.model || "fake" };
  const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
  if (!body.stream) {
    return send_json(res, {
      ...common, object: "chat.completion", usage,
      choices: [{ index: 0, message: { role: "assistant", content: REPLY }, finish_reason: "stop" }],
    });
  }
  open_sse(res);
  const chunk = (choices, extra = {}) =>
    res.write(`data: ${JSON.stringify({ ...common, object: "chat.completion.chunk", choices, ...extra })}\n\n`);
  chunk([{ index: 0, delta: { role: "assistant", content: REPLY }, finish_reason: null }]);
  chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
  chunk([], { usage });
  res.end("data: [DONE]\n\n");
}

// ---- Anthropic messages.
function answer_messages(res, body) {
  const message = {
    id: "msg_fake", type: "message", role: "assistant", model: body.model || "fake",
    content: [{ type: "text", text: REPLY }], stop_reason: "end_turn", stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 3 },
  };
  if (!body.stream) {
    return send_json(res, message);
  }
  open_sse(res);
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event("message_start", { message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } });
  event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  event("content_block_delta", { index: 0, delta: { type: "text_delta", text: REPLY } });
  event("content_block_stop", { index: 0 });
  event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } });
  event("message_stop", {});
  res.end();
}

// ---- Gemini. Its model router asks for JSON first: answer in kind.
function answer_gemini(res, body, stream) {
  const json_mode = body.generationConfig?.responseMimeType === "application/json" ||
    body.config?.responseMimeType === "application/json";
  const text = json_mode ? JSON.stringify({ reasoning: REPLY, model_choice: "flash" }) : REPLY;
  const reply = {
    candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
    modelVersion: "fake",
  };
  if (!stream) {
    return send_json(res, reply);
  }
  open_sse(res);
  res.end(`data: ${JSON.stringify(reply)}\r\n\r\n`);
}

function route(req, res, url, body) {
  const path = url.pathname;
  if (req.method !== "POST") {
    // As OpenAI does: the Responses WebSocket's path without the Upgrade.
    if (path.endsWith("/responses")) {
      return send_json(res, { error: { message: "fake provider: GET …/responses needs Upgrade: websocket" } }, 404);
    }
    return send_json(res, {});
  }
  if (path.endsWith("/chat/completions")) return answer_chat(res, body);
  if (path.endsWith("/responses")) return answer_responses(res, body);
  if (path.endsWith("/messages/count_tokens")) return send_json(res, { input_tokens: 5 });
  if (path.endsWith("/messages")) return answer_messages(res, body);
  if (path.endsWith(":countTokens")) return send_json(res, { totalTokens: 5 });
  if (path.endsWith(":generateContent")) return answer_gemini(res, body, false);
  if (path.endsWith(":streamGenerateContent")) return answer_gemini(res, body, true);
  send_json(res, { error: { message: `fake provider: no route for ${path}` } }, 404);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://fake");
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (piece) => { text += piece; });
  req.on("end", () => {
    let body = {};
    try { body = text ? JSON.parse(text) : {}; } catch { body = {}; }
    record(req, url, { model: body.model });
    route(req, res, url, body);
  });
});

// The Responses WebSocket: each response.create is answered with the events
// of one response; a prewarm (generate: false) gets an empty one.
const sockets = new WebSocketServer({ noServer: true });
server.on("upgrade", (req, socket, head) => {
  const url = new URL(req.url, "http://fake");
  record(req, url, { websocket: true });
  if (!url.pathname.endsWith("/responses")) {
    socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
    return;
  }
  sockets.handleUpgrade(req, socket, head, (ws) => {
    ws.on("message", (data) => {
      let message = {};
      try { message = JSON.parse(data.toString()); } catch { return; }
      fs.writeSync(log, JSON.stringify({ websocket_message: message.type, generate: message.generate }) + "\n");
      if (message.type !== "response.create") return;
      for (const event of response_events(message.model || "fake", message.generate !== false)) {
        ws.send(JSON.stringify(event));
      }
    });
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});

#include "server/demo_provider.hpp"

#include "util/json.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <thread>

namespace keyshim::server {
namespace {

using namespace std::chrono_literals;

// Slow enough that the reply visibly arrives piece by piece, as it would
// from a real model, and that it is obvious keyshim relays as it goes.
constexpr auto k_chunk_gap = 150ms;

constexpr const char* k_rate_limited_body =
    R"({"error":{"message":"Rate limit reached for demo-model in organization org-demo on requests per )"
    R"(day (RPD): Limit 200, Used 200, Requested 1. This is keyshim's simulated provider.",)"
    R"("type":"requests","param":null,"code":"rate_limit_exceeded"}})";

constexpr const char* k_revoked_body =
    R"({"error":{"message":"Incorrect API key provided. This demo key has been revoked )"
    R"((keyshim's simulated provider).","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})";

constexpr const char* k_models_body =
    R"({"object":"list","data":[{"id":"demo","object":"model","created":1764374400,"owned_by":"keyshim-demo"}]})";

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

std::string presented_key(const httplib::Request& req) {
  std::string authorization = req.get_header_value("Authorization");
  return starts_with(authorization, "Bearer ") ? authorization.substr(7) : authorization;
}

std::string sse_chunk(const std::string& content, bool last) {
  using util::Json;
  Json delta = Json::make_object();
  if (!last) {
    delta.add("content", Json::make_string(content));
  }
  Json choice;
  choice.add("index", Json::make_number(0))
      .add("delta", std::move(delta))
      .add("finish_reason", last ? Json::make_string("stop") : Json());
  Json chunk;
  chunk.add("id", Json::make_string("chatcmpl-demo"))
      .add("object", Json::make_string("chat.completion.chunk"))
      .add("model", Json::make_string("demo"))
      .add("choices", Json::make_array({std::move(choice)}));
  return fmt::format("data: {}\n\n", chunk.dump());
}

// One chunk per call, a pause before every chunk but the first, then the
// final chunk and [DONE]. Stops early when keyshim hangs up.
void stream_reply(httplib::Response& res) {
  auto next = std::make_shared<std::size_t>(0);
  res.set_chunked_content_provider("text/event-stream", [next](std::size_t, httplib::DataSink& sink) {
    const std::vector<std::string>& chunks = demo_reply_chunks();
    if (*next > 0) {
      std::this_thread::sleep_for(k_chunk_gap);
    }
    if (!sink.is_writable()) {
      return false;
    }
    std::string piece;
    if (*next < chunks.size()) {
      piece = sse_chunk(chunks[*next], false);
    } else {
      piece = sse_chunk("", true) + "data: [DONE]\n\n";
    }
    if (!sink.write(piece.data(), piece.size())) {
      return false;
    }
    if (++*next > chunks.size()) {
      sink.done();
    }
    return true;
  });
}

void chat_completions(const httplib::Request& req, httplib::Response& res) {
  std::string key = presented_key(req);
  if (starts_with(key, "demo-ratelimited-")) {
    res.status = 429;
    res.set_header("Retry-After", "3600");
    res.set_content(k_rate_limited_body, "application/json");
  } else if (starts_with(key, "demo-healthy-")) {
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    stream_reply(res);
  } else {
    // demo-revoked-* and anything else: the provider does not know the key.
    res.status = 401;
    res.set_content(k_revoked_body, "application/json");
  }
}

} // namespace

const std::vector<DemoKey>& demo_keys() {
  static const std::vector<DemoKey> keys = {
      {"ratelimited", "demo-ratelimited-0001", "answers 429 rate_limit_exceeded, Retry-After: 3600"},
      {"revoked", "demo-revoked-0002", "answers 401 invalid_api_key"},
      {"healthy", "demo-healthy-0003", "streams the reply"},
  };
  return keys;
}

const std::vector<std::string>& demo_reply_chunks() {
  static const std::vector<std::string> chunks = {
      "Hello",   " from",    " the",          " healthy", " key!", " keyshim", " moved",
      " past",   " the",     " rate-limited", " and",     " the",  " revoked", " key",
      " before", " sending", " you",          " a",       " byte."};
  return chunks;
}

struct DemoProvider::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

DemoProvider::DemoProvider() : m_impl(std::make_unique<Impl>()) {
  // Without it every keep-alive exchange waits ~40 ms for a delayed ACK.
  m_impl->server.set_tcp_nodelay(true);
  m_impl->server.Post("/v1/chat/completions", chat_completions);
  m_impl->server.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(k_models_body, "application/json");
  });
}

DemoProvider::~DemoProvider() {
  stop();
}

bool DemoProvider::start(std::string& error) {
  m_impl->port = m_impl->server.bind_to_any_port("127.0.0.1");
  if (m_impl->port <= 0) {
    error = "demo: cannot bind the simulated provider on 127.0.0.1";
    return false;
  }
  m_impl->thread = std::thread([this] { m_impl->server.listen_after_bind(); });
  // httplib's stop() does nothing until the accept loop has started, and a
  // stop() that came too early would leave the thread unjoinable: wait for it.
  for (int i = 0; i < 2000 && !m_impl->server.is_running(); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::string DemoProvider::base_url() const {
  return fmt::format("http://127.0.0.1:{}", m_impl->port);
}

void DemoProvider::stop() {
  m_impl->server.stop();
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

} // namespace keyshim::server

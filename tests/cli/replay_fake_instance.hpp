#pragma once
// Not keyshim: a stand-in for a running instance, for `keyshim replay`'s
// tests. It serves /captures from canned JSON in the agreed shape
// (/captures/ID and the list) and answers the replayed request as the test
// scripts it, or relays it to a real keyshim.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace keyshim::test {

using namespace std::chrono_literals;

// What the fake instance saw of the replayed request.
struct Replayed {
  std::string method;
  std::string target;
  std::string body;
  httplib::Headers headers;
};

// Not keyshim: an HTTP server on its own loopback port that serves
// /captures from canned JSON and answers the replay as the test scripts it.
class FakeInstance {
public:
  // Serves /captures only to a client presenting `token` as a Bearer key.
  explicit FakeInstance(std::string token) : m_token(std::move(token)) {
    m_server.Get(R"(/captures/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorised(req, res)) {
        return;
      }
      std::uint64_t id = std::stoull(req.matches[1]);
      std::lock_guard lock(m_mutex);
      if (id != m_id) {
        res.status = 404;
        res.set_content(R"({"error":"no capture )" + std::to_string(id) + R"(: the ring holds 3..202"})",
                        "application/json");
        return;
      }
      res.set_content(m_capture, "application/json");
    });
    m_server.Get("/captures", [this](const httplib::Request& req, httplib::Response& res) {
      if (authorised(req, res)) {
        std::lock_guard lock(m_mutex);
        res.set_content(m_list, "application/json");
      }
    });
    m_server.Post(".*", [this](const httplib::Request& req, httplib::Response& res) { replay(req, res); });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    // Bound and listening: a client connecting before the accept loop runs waits in the backlog.
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
  }
  ~FakeInstance() {
    release();
    m_server.stop();
    m_thread.join();
  }

  int port() const { return m_port; }
  std::string address() const { return "127.0.0.1:" + std::to_string(m_port); }
  void serve_capture(std::uint64_t id, std::string json) {
    std::lock_guard lock(m_mutex);
    m_id = id;
    m_capture = std::move(json);
  }
  void serve_list(std::string json) {
    std::lock_guard lock(m_mutex);
    m_list = std::move(json);
  }
  // The replay's answer: its status and events, the rest after release()
  // when `hold`.
  void answer(int status, std::vector<std::string> events, bool hold = false) {
    std::lock_guard lock(m_mutex);
    m_status = status;
    m_events = std::move(events);
    m_hold = hold;
  }
  void release() {
    std::lock_guard lock(m_mutex);
    m_released = true;
    m_changed.notify_all();
  }
  std::optional<Replayed> replayed() const {
    std::lock_guard lock(m_mutex);
    return m_replayed;
  }
  // Relay the replay to a real keyshim on `port` instead of answering it
  // (whole, not streamed): /captures stays canned, the rest is keyshim's.
  void forward_to(int port) {
    std::lock_guard lock(m_mutex);
    m_forward_port = port;
  }
  // The answer's first event is being written, and the rest waits for release().
  std::atomic<bool> holding{false};

private:
  bool authorised(const httplib::Request& req, httplib::Response& res) const {
    if (req.get_header_value("Authorization") == "Bearer " + m_token) {
      return true;
    }
    res.status = 401;
    res.set_content(R"({"error":{"message":"keyshim: this keyshim requires its client_token"}})",
                    "application/json");
    return false;
  }

  void forward(int port, const httplib::Request& req, httplib::Response& res) {
    httplib::Client keyshim("127.0.0.1", port);
    keyshim.set_read_timeout(20, 0);
    keyshim.set_url_encode(false);
    httplib::Headers headers;
    for (const auto& [name, value] : req.headers) {
      if (name != "Host" && name != "Content-Length" && name.find("REMOTE_") != 0 &&
          name.find("LOCAL_") != 0) {
        headers.emplace(name, value);
      }
    }
    httplib::Result answer =
        keyshim.Post(req.target, headers, req.body, req.get_header_value("Content-Type"));
    res.status = answer ? answer->status : 599;
    res.set_content(answer ? answer->body : "",
                    answer ? answer->get_header_value("Content-Type") : "text/plain");
  }

  void replay(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(m_mutex);
    m_replayed = Replayed{req.method, req.target, req.body, req.headers};
    if (m_forward_port != 0) {
      forward(m_forward_port, req, res);
      return;
    }
    res.status = m_status;
    res.set_chunked_content_provider("text/event-stream", [this](std::size_t, httplib::DataSink& sink) {
      std::unique_lock held(m_mutex);
      for (std::size_t i = 0; i < m_events.size(); ++i) {
        // Set before the write: once the client has the first event, this says the rest is held.
        holding = i == 0 && m_hold;
        if (!sink.write(m_events[i].data(), m_events[i].size())) {
          return false;
        }
        if (holding) {
          if (!m_changed.wait_for(held, 20s, [this] { return m_released; })) {
            return false;
          }
        }
      }
      sink.done();
      return true;
    });
  }

  std::string m_token;
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::uint64_t m_id = 0;
  std::string m_capture;
  std::string m_list = R"({"size":200,"bytes":0,"body_limit":65536,"entries":[]})";
  int m_status = 200;
  std::vector<std::string> m_events = {"data: {\"replayed\":1}\n\n"};
  bool m_hold = false;
  bool m_released = false;
  int m_forward_port = 0;
  std::optional<Replayed> m_replayed;
};

} // namespace keyshim::test

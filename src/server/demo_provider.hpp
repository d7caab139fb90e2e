#pragma once
// A simulated OpenAI-style provider on 127.0.0.1 for `keyshim demo`. It
// answers by the key it is given, so one request shows the whole failover:
//   demo-ratelimited-*  429, Retry-After: 3600, rate_limit_exceeded
//   demo-revoked-*      401 invalid_api_key
//   demo-healthy-*      200 text/event-stream, a few chunks ~150 ms apart
// GET /v1/models lists the one demo model. Nothing leaves the machine.
#include <memory>
#include <string>
#include <vector>

namespace keyshim::server {

// The demo pool's keys, in the order keyshim tries them (strategy ordered).
struct DemoKey {
  const char* label;
  const char* secret;
  const char* behaviour; // what the provider does with it, for the demo's narration
};
const std::vector<DemoKey>& demo_keys();

// The text the healthy key streams, chunk by chunk (tests look for it).
const std::vector<std::string>& demo_reply_chunks();

class DemoProvider {
public:
  DemoProvider();
  // Stops serving and joins the server thread.
  ~DemoProvider();
  DemoProvider(const DemoProvider&) = delete;
  DemoProvider& operator=(const DemoProvider&) = delete;

  // Bind 127.0.0.1 on a free port and serve on a background thread. Call
  // after SignalWatcher::block_signals(), so the thread inherits the mask.
  // False with `error` when no port could be bound.
  bool start(std::string& error);
  // "http://127.0.0.1:PORT".
  std::string base_url() const;
  // Stop serving; idempotent.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace keyshim::server

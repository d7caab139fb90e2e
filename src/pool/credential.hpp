#pragma once
// A key_cmd key's token over time (docs/behaviour.md §10): the token
// requests are sent with now, until when it is good, and when the command
// runs again to replace it. Ahead of the expiry the output reported (by a
// quarter of the token's remaining life, at most 5 minutes), after
// key_cmd_refresh, at once after a 401; a failed run is tried again after
// 5 s, doubling up to 5 minutes, but never later than the expiry. Requests
// keep the old token until a new one arrives. Pure and not thread-safe:
// HealthCell holds one under its mutex, and time comes in as arguments.
#include "config/config.hpp"
#include "util/clock.hpp"
#include "util/secret.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace keyshim::pool {

using std::chrono::milliseconds;

// Counts token changes in the whole process: what redaction reads to know
// when to look at the tokens again (relay/redact.hpp).
std::uint64_t token_epoch();

class Credential {
public:
  // The token a run of `command` printed at `now` (the pool file's load).
  Credential(util::Secret token, const config::KeyCommand& command, util::TimePoint now);

  // The token to send. Never null; replaced whole, so a request holding it
  // keeps a token that stays intact.
  const std::shared_ptr<const util::Secret>& token() const { return m_token; }
  // Counts tokens: a newer token has a higher number.
  std::uint64_t generation() const { return m_generation; }
  // Requests may use the token: it has not expired and no upstream refused it.
  bool valid(util::TimePoint now) const;
  // When the command runs next; nullopt when only a 401 would run it (a bare
  // token without key_cmd_refresh).
  std::optional<util::TimePoint> due() const { return m_due; }
  bool running() const { return m_running; }

  // A run is due at `now` and none is running: it is running from now on.
  bool start(util::TimePoint now);
  // The run printed `token`, good until `expires` when it said so. The same
  // token again keeps its generation.
  void succeed(util::Secret token, std::optional<util::TimePoint> expires, util::TimePoint now);
  // The run failed for `reason`; returns how long until the next one.
  milliseconds fail(std::string reason, util::TimePoint now);
  // An upstream answered 401 to the token of `generation`. True when a run is
  // wanted for it: the token is no longer valid and a run is due now (or
  // soon: runs are at least a second apart). False when that token has been
  // replaced already: the caller simply uses the new one.
  bool reject(std::uint64_t generation, util::TimePoint now);
  // A reload ran the command again: its token and settings take over.
  void adopt(util::Secret token, const config::KeyCommand& command, util::TimePoint now);

  // For status: the expiry reported with the current token, the tokens
  // received since start, and why the last run failed ("" after a success).
  std::optional<util::TimePoint> expires() const { return m_expires; }
  std::uint64_t refreshes() const { return m_refreshes; }
  const std::string& error() const { return m_error; }

private:
  void take(util::Secret token, std::optional<util::TimePoint> expires, util::TimePoint now);
  void schedule(util::TimePoint now);
  util::TimePoint not_before(util::TimePoint when) const;

  std::shared_ptr<const util::Secret> m_token;
  std::uint64_t m_generation = 1;
  std::optional<milliseconds> m_interval;
  std::optional<util::TimePoint> m_expires;
  std::optional<util::TimePoint> m_due;
  std::optional<util::TimePoint> m_last_run;
  bool m_running = false;
  bool m_rejected = false;
  int m_failures = 0;
  std::uint64_t m_refreshes = 0;
  std::string m_error;
};

} // namespace keyshim::pool

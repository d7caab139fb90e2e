#pragma once
// Captures everything the logger writes while it lives (tests assert on it,
// e.g. that no key byte appears).
#include "util/log.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace keyshim::test {

class LogCapture {
public:
  explicit LogCapture(util::LogLevel level = util::LogLevel::debug,
                      util::LogFormat format = util::LogFormat::text);
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const;
  bool contains(const std::string& needle) const { return text().find(needle) != std::string::npos; }
  // Wait until `needle` has been logged (request lines are written when the
  // response has finished, which can be just after the client saw its end).
  bool wait_for(const std::string& needle,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

private:
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_changed;
  std::string m_text;
};

} // namespace keyshim::test

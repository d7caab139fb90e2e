#pragma once
// Captures everything the logger writes while it lives (tests assert on it,
// e.g. that no key byte appears).
#include "util/log.hpp"

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

private:
  mutable std::mutex m_mutex;
  std::string m_text;
};

} // namespace keyshim::test

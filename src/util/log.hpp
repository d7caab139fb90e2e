#pragma once
// The process-wide logger: levels, text or JSON lines, one write per line.
// Thread-safe. The format call is skipped when the level is off.
//
// Keys have no formatter (util::Secret), so nothing here can print one; the
// relay also redacts key material echoed by upstreams before logging.
#include "util/json.hpp"

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshim::util {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };
enum class LogFormat { text, json };

class Logger {
public:
  using Sink = std::function<void(std::string_view line)>;

  static Logger& instance();

  void set_level(LogLevel level) { m_level = level; }
  void set_format(LogFormat format) { m_format = format; }
  LogFormat format() const { return m_format; }
  bool enabled(LogLevel level) const { return level <= m_level; }
  // Replace stderr (tests capture output here). Passing nullptr restores stderr.
  void set_sink(Sink sink);

  // A free-form message: "TS warn: text" or {"ts":..,"level":..,"msg":..}.
  void message(LogLevel level, std::string_view text);

  // A structured record. Text form: "TS <text>"; JSON form: "ts" and
  // "level", then the members of the object `fields`.
  void record(LogLevel level, std::string_view text, const Json& fields);

private:
  void write(std::string line);

  LogLevel m_level = LogLevel::info;
  LogFormat m_format = LogFormat::text;
  Sink m_sink;
};

// "2026-11-29T21:40:01.123Z" for now.
std::string utc_timestamp();

template <typename... Args> void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  Logger& logger = Logger::instance();
  if (logger.enabled(level)) {
    logger.message(level, fmt::format(format, std::forward<Args>(args)...));
  }
}

template <typename... Args> void log_error(fmt::format_string<Args...> f, Args&&... a) {
  log(LogLevel::error, f, std::forward<Args>(a)...);
}
template <typename... Args> void log_warn(fmt::format_string<Args...> f, Args&&... a) {
  log(LogLevel::warn, f, std::forward<Args>(a)...);
}
template <typename... Args> void log_info(fmt::format_string<Args...> f, Args&&... a) {
  log(LogLevel::info, f, std::forward<Args>(a)...);
}
template <typename... Args> void log_debug(fmt::format_string<Args...> f, Args&&... a) {
  log(LogLevel::debug, f, std::forward<Args>(a)...);
}

} // namespace keyshim::util

#include "util/log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace keyshim::util {
namespace {

std::mutex& write_mutex() {
  static std::mutex m;
  return m;
}

const char* level_name(LogLevel level) {
  switch (level) {
  case LogLevel::error:
    return "error";
  case LogLevel::warn:
    return "warn";
  case LogLevel::info:
    return "info";
  case LogLevel::debug:
    return "debug";
  }
  return "info";
}

// {"ts":..,"level":..}: the start of every JSON line.
Json json_line(LogLevel level) {
  Json line;
  line.add("ts", Json::make_string(utc_timestamp()));
  line.add("level", Json::make_string(level_name(level)));
  return line;
}

} // namespace

Logger& Logger::instance() {
  static Logger logger;
  return logger;
}

void Logger::set_sink(Sink sink) {
  std::lock_guard lock(write_mutex());
  m_sink = std::move(sink);
}

void Logger::message(LogLevel level, std::string_view text) {
  if (!enabled(level)) {
    return;
  }
  if (m_format == LogFormat::json) {
    write(json_line(level).add("msg", Json::make_string(std::string(text))).dump());
  } else {
    write(fmt::format("{} {}: {}", utc_timestamp(), level_name(level), text));
  }
}

void Logger::record(LogLevel level, std::string_view text, const Json& fields) {
  if (!enabled(level)) {
    return;
  }
  if (m_format == LogFormat::text) {
    write(fmt::format("{} {}", utc_timestamp(), text));
    return;
  }
  Json line = json_line(level);
  for (const auto& [name, value] : fields.members()) {
    line.add(name, value);
  }
  write(line.dump());
}

void Logger::write(std::string line) {
  line += '\n';
  std::lock_guard lock(write_mutex());
  if (m_sink) {
    m_sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
}

std::string utc_timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms);
}

} // namespace keyshim::util

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
    write(fmt::format(R"({{"ts":"{}","level":"{}","msg":"{}"}})", utc_timestamp(), level_name(level),
                      json_escape(text)));
  } else {
    write(fmt::format("{} {}: {}", utc_timestamp(), level_name(level), text));
  }
}

void Logger::record(LogLevel level, std::string_view text, const std::vector<LogField>& fields) {
  if (!enabled(level)) {
    return;
  }
  if (m_format == LogFormat::text) {
    write(fmt::format("{} {}", utc_timestamp(), text));
    return;
  }
  std::string line = fmt::format(R"({{"ts":"{}","level":"{}")", utc_timestamp(), level_name(level));
  for (const LogField& field : fields) {
    if (field.number) {
      line += fmt::format(R"(,"{}":{})", field.name, field.value);
    } else {
      line += fmt::format(R"(,"{}":"{}")", field.name, json_escape(field.value));
    }
  }
  line += '}';
  write(std::move(line));
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

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
      } else {
        out += c;
      }
    }
  }
  return out;
}

} // namespace keyshim::util

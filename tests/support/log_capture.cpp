#include "support/log_capture.hpp"

namespace keyshim::test {

LogCapture::LogCapture(util::LogLevel level, util::LogFormat format) {
  util::Logger& logger = util::Logger::instance();
  logger.set_level(level);
  logger.set_format(format);
  logger.set_sink([this](std::string_view line) {
    std::lock_guard lock(m_mutex);
    m_text.append(line);
    m_changed.notify_all();
  });
}

LogCapture::~LogCapture() {
  util::Logger& logger = util::Logger::instance();
  logger.set_sink(nullptr);
  logger.set_level(util::LogLevel::info);
  logger.set_format(util::LogFormat::text);
}

bool LogCapture::wait_for(const std::string& needle, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(m_mutex);
  return m_changed.wait_for(lock, timeout, [&] { return m_text.find(needle) != std::string::npos; });
}

std::string LogCapture::text() const {
  std::lock_guard lock(m_mutex);
  return m_text;
}

} // namespace keyshim::test

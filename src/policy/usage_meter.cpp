// The usage meter: choose how to read the body from its head, decode a copy
// of it as it passes, and hand events or the whole JSON document to the tally.
#include "policy/usage_meter.hpp"

#include "policy/event_skimmer.hpp"
#include "policy/stream_decoder.hpp"
#include "policy/usage_tally.hpp"
#include "util/ascii.hpp"
#include "util/size_class_allocator.hpp"

#include <exception>
#include <string>
#include <utility>

namespace keyshim::policy {
namespace {

enum class BodyKind { events, json, unreadable };

BodyKind body_kind(std::string_view content_type) {
  std::string_view media = util::trim(content_type.substr(0, content_type.find(';')));
  if (util::iequals(media, "text/event-stream")) {
    return BodyKind::events;
  }
  constexpr std::string_view k_json_suffix = "+json";
  if (media.empty() || util::iequals(media, "application/json") ||
      (media.size() >= k_json_suffix.size() &&
       util::iequals(media.substr(media.size() - k_json_suffix.size()), k_json_suffix))) {
    return BodyKind::json;
  }
  return BodyKind::unreadable; // an HTML error page, a file download...
}

// A JSON body is only useful whole, so it is kept (up to a cap) and parsed at
// the end. A body that cannot be a JSON object or array is dropped at its
// first byte, so a mislabelled error page costs nothing.
class JsonBody final : public DecodedSink {
public:
  explicit JsonBody(std::size_t max_bytes) : m_max_bytes(max_bytes) {}

  void take(std::string_view bytes) override {
    if (m_refused) {
      return;
    }
    if (m_text.empty()) {
      std::size_t start = bytes.find_first_not_of(" \t\r\n");
      if (start == std::string_view::npos) {
        return;
      }
      bytes.remove_prefix(start);
      if (bytes.front() != '{' && bytes.front() != '[') {
        refuse();
        return;
      }
    }
    if (bytes.size() > m_max_bytes - m_text.size()) {
      refuse();
      return;
    }
    m_text.append(bytes);
  }

  // The whole body, or nullptr when it was refused.
  const std::string* text() const { return m_refused ? nullptr : &m_text; }

private:
  void refuse() {
    m_refused = true;
    std::string().swap(m_text);
  }

  std::size_t m_max_bytes;
  std::string m_text;
  bool m_refused = false;
};

} // namespace

// Everything a readable body needs, allocated only for one.
struct UsageMeter::Reading final : detail::EventSink {
  Reading(BodyKind kind, std::unique_ptr<StreamDecoder> decoder_)
      : decoder(std::move(decoder_)), events(*this, k_max_event_bytes), json(k_max_body_bytes),
        body(kind == BodyKind::events ? static_cast<DecodedSink*>(&events) : &json),
        is_events(kind == BodyKind::events) {}

  void on_event(std::string_view data) override { tally.take_event(data); }

  std::unique_ptr<StreamDecoder> decoder; // null: the body is not compressed
  detail::UsageTally tally;
  detail::EventSkimmer events;
  JsonBody json;
  DecodedSink* body; // events or json
  bool is_events;
  bool corrupt = false; // the decoder gave up: nothing after this is read
};

void UsageMeter::Dispose::operator()(Reading* reading) const noexcept {
  reading->~Reading();
  util::SizeClassCache::deallocate(reading, sizeof(Reading));
}

template <class... Args>
std::unique_ptr<UsageMeter::Reading, UsageMeter::Dispose> UsageMeter::make_reading(Args&&... args) {
  static_assert(alignof(Reading) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "the cache's blocks come from operator new");
  void* block = util::SizeClassCache::allocate(sizeof(Reading));
  try {
    return std::unique_ptr<Reading, Dispose>(new (block) Reading(std::forward<Args>(args)...));
  } catch (...) {
    util::SizeClassCache::deallocate(block, sizeof(Reading));
    throw;
  }
}

UsageMeter::UsageMeter(std::string_view content_type, std::string_view content_encoding) {
  BodyKind kind = body_kind(content_type);
  if (kind == BodyKind::unreadable) {
    return;
  }
  try {
    if (is_identity(content_encoding)) { // most bodies: no decoder to allocate
      m_reading = make_reading(kind, nullptr);
    } else if (std::unique_ptr<StreamDecoder> decoder = make_decoder(content_encoding)) {
      m_reading = make_reading(kind, std::move(decoder));
    }
  } catch (const std::exception&) {
    m_reading.reset(); // out of memory: usage stays unknown
  }
}

UsageMeter::~UsageMeter() = default;
UsageMeter::UsageMeter(UsageMeter&&) noexcept = default;
UsageMeter& UsageMeter::operator=(UsageMeter&&) noexcept = default;

void UsageMeter::feed(std::string_view piece) noexcept {
  if (!m_reading || m_reading->corrupt) {
    return;
  }
  // The meter runs inside the relay's asynchronous handlers: no exception
  // (only std::bad_alloc is possible) may leave it. Giving up costs only the
  // counts of this one response.
  try {
    if (!m_reading->decoder) {
      if (!piece.empty()) {
        m_reading->body->take(piece);
      }
    } else if (!m_reading->decoder->decode(piece, *m_reading->body)) {
      m_reading->corrupt = true;
    }
  } catch (const std::exception&) {
    m_reading.reset();
  }
}

Usage UsageMeter::finish() noexcept {
  if (!m_reading) {
    return m_usage;
  }
  try {
    // An event stream's events were read as they completed; an unfinished
    // last event is dropped, as the event stream format says. A JSON body is
    // read now, and only if all of it was decoded.
    if (!m_reading->is_events && !m_reading->corrupt) {
      if (const std::string* text = m_reading->json.text()) {
        m_reading->tally.take_body(*text);
      }
    }
    m_usage = m_reading->tally.result();
  } catch (const std::exception&) {
    m_usage = Usage{};
  }
  m_reading.reset();
  return m_usage;
}

} // namespace keyshim::policy

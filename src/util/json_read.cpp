// util::parse_json: nlohmann-json's parser feeding a builder of Json values.
#include "util/json.hpp"
#include "util/json_repair.hpp"

#include <nlohmann/json.hpp>

#include <limits>

namespace keyshim::util {
namespace {

using Sax = nlohmann::json_sax<nlohmann::json>;
using Clamps = std::vector<detail::RepairedJson::Clamp>;

// "[json.exception.parse_error.101] parse error at line 1, column 15: syntax
// error while parsing value - invalid literal; last read: '"b": x'" -> "syntax
// error while parsing value - invalid literal". The offset says where; the
// text read is upstream's and can be long.
std::string message_of(const nlohmann::json::exception& ex, const std::string& last_token) {
  std::string text = ex.what();
  if (std::size_t bracket = text.find("] "); bracket != std::string::npos) {
    text.erase(0, bracket + 2);
  }
  if (text.starts_with("parse error")) {
    if (std::size_t colon = text.find(": "); colon != std::string::npos) {
      text.erase(0, colon + 2);
    }
  }
  std::string read = "; last read: '" + last_token + "'";
  if (std::size_t at = text.find(read); at != std::string::npos) {
    text.erase(at, read.size());
  }
  return text;
}

// Builds the Json value from the parser's events without recursion: one frame
// per open array or object, at most max_depth of them.
class Builder final : public Sax {
public:
  Builder(std::size_t max_depth, const Clamps& clamps) : m_max_depth(max_depth), m_clamps(clamps) {}

  bool null() override { return value(Json()); }
  bool boolean(bool v) override { return value(Json::make_bool(v)); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v), v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return number(v); }
  bool string(string_t& v) override { return value(Json::make_string(std::move(v))); }
  bool binary(binary_t& /*v*/) override { return false; } // JSON text has none
  bool start_object(std::size_t /*size*/) override { return open(true); }
  bool key(string_t& name) override {
    m_frames.back().key = std::move(name);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*size*/) override { return open(false); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::json::exception& ex) override {
    // `position` counts the bytes read, the offending one included.
    m_error = JsonError{position > 0 ? position - 1 : 0, message_of(ex, last_token)};
    return false;
  }

  std::optional<Json> result() { return std::move(m_result); }
  const JsonError& error() const { return m_error; }
  bool too_deep() const { return m_too_deep; }

private:
  struct Frame {
    bool object = false;
    Json::Array items;
    Json::Object members;
    std::string key;
  };

  bool value(Json v) {
    if (m_frames.empty()) {
      m_result = std::move(v);
    } else if (Frame& top = m_frames.back(); top.object) {
      top.members.emplace_back(std::move(top.key), std::move(v));
    } else {
      top.items.push_back(std::move(v));
    }
    return true;
  }

  bool open(bool object) {
    if (m_frames.size() >= m_max_depth) {
      m_too_deep = true;
      return false;
    }
    m_frames.push_back(Frame{object, {}, {}, {}});
    return true;
  }

  bool close() {
    Frame top = std::move(m_frames.back());
    m_frames.pop_back();
    return value(top.object ? Json::make_object(std::move(top.members))
                            : Json::make_array(std::move(top.items)));
  }

  // Numbers arrive in document order, so the repair's ordinals find their
  // clamp. A non-negative integer that fits 64 bits stays exact.
  bool number(double v, std::optional<std::uint64_t> exact = std::nullopt) {
    if (m_next_clamp < m_clamps.size() && m_clamps[m_next_clamp].ordinal == m_numbers) {
      v = m_clamps[m_next_clamp].negative ? std::numeric_limits<double>::lowest()
                                          : std::numeric_limits<double>::max();
      exact.reset();
      ++m_next_clamp;
    }
    ++m_numbers;
    return value(exact ? Json::make_unsigned(*exact) : Json::make_number(v));
  }

  std::size_t m_max_depth;
  const Clamps& m_clamps;
  std::size_t m_next_clamp = 0;
  std::size_t m_numbers = 0;
  std::vector<Frame> m_frames;
  std::optional<Json> m_result;
  JsonError m_error;
  bool m_too_deep = false;
};

struct Attempt {
  std::optional<Json> value;
  JsonError error;
  bool repairable = false; // a parse error, not an exhausted depth or memory
};

Attempt read(std::string_view text, std::size_t max_depth, const Clamps& clamps, bool comments = false) {
  Builder builder(max_depth, clamps);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                                   true, comments);
  } catch (const std::exception& ex) {
    // The builder reports every parse error itself; only an allocation
    // failure gets here.
    return Attempt{std::nullopt, JsonError{0, ex.what()}, false};
  }
  if (ok) {
    return Attempt{builder.result(), {}, false};
  }
  if (builder.too_deep()) {
    return Attempt{std::nullopt, JsonError{detail::too_deep_at(text, max_depth), "nesting too deep"}, false};
  }
  return Attempt{std::nullopt, builder.error(), true};
}

// What parse_json_with_comments reads: hand-edited settings files, so no
// repair pass, and no deeper than parse_json's default.
constexpr std::size_t k_settings_depth = 64;

} // namespace

std::optional<Json> parse_json_with_comments(std::string_view text, JsonError* error) {
  Attempt attempt = read(text, k_settings_depth, {}, true);
  if (!attempt.value && error != nullptr) {
    *error = attempt.error;
  }
  return std::move(attempt.value);
}

std::optional<Json> parse_json(std::string_view text, JsonError* error, int max_depth) {
  std::size_t depth = max_depth > 0 ? static_cast<std::size_t>(max_depth) : 0;
  Attempt attempt = read(text, depth, {});
  if (!attempt.value && attempt.repairable) {
    // Only a refused document pays for this pass. When it finds an overflowing
    // number, a lone surrogate or invalid UTF-8, it rewrites every one of them
    // at once and the result is read again.
    detail::RepairedJson repaired = detail::repair_json(text);
    if (repaired.changed) {
      attempt = read(repaired.text, depth, repaired.clamps);
      attempt.error.offset = repaired.original_offset(attempt.error.offset, text.size());
    }
  }
  if (!attempt.value && error != nullptr) {
    *error = attempt.error;
  }
  return std::move(attempt.value);
}

} // namespace keyshim::util

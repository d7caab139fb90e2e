#pragma once
// keyshim's JSON value, reader and writer: provider error bodies, event
// payloads and usage reports in; /status, /health, error bodies and JSON log
// lines out. nlohmann-json does the reading and writing behind this header;
// only src/util/ includes it.
//
// Reading never throws and is forgiving where one odd spot would otherwise
// cost the whole document: a number beyond a double's range reads as the
// largest double of its sign (one too small as 0), a lone UTF-16 surrogate
// escape and invalid UTF-8 in a string read as U+FFFD. Writing never throws
// and never emits invalid UTF-8: it is replaced by U+FFFD.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyshim::util {

class Json {
public:
  enum class Type { null, boolean, number, string, array, object };
  using Array = std::vector<Json>;
  // Members in document order; duplicate names are kept, lookups find the first.
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;
  static Json make_bool(bool value);
  static Json make_number(double value);
  // An unsigned integer, kept and written exactly: counters pass 2^53, where
  // a double would round them and print them as floats.
  static Json make_unsigned(std::uint64_t value);
  // Counts and other integers: non-negative ones exactly (make_unsigned),
  // negative ones as doubles (exact down to -2^53).
  template <std::integral T> static Json make_number(T value) {
    if constexpr (std::is_signed_v<T>) {
      if (value < 0) {
        return make_number(static_cast<double>(value));
      }
    }
    return make_unsigned(static_cast<std::uint64_t>(value));
  }
  static Json make_string(std::string value);
  static Json make_array(Array items = {});
  static Json make_object(Object members = {});

  Type type() const { return m_type; }
  bool is_null() const { return m_type == Type::null; }
  bool is_bool() const { return m_type == Type::boolean; }
  bool is_number() const { return m_type == Type::number; }
  bool is_string() const { return m_type == Type::string; }
  bool is_array() const { return m_type == Type::array; }
  bool is_object() const { return m_type == Type::object; }

  // The value, or the fallback when the type differs.
  bool as_bool(bool fallback = false) const { return is_bool() ? m_bool : fallback; }
  double as_number(double fallback = 0) const { return is_number() ? m_number : fallback; }
  // The exact value of a number made by make_unsigned (or an integral
  // make_number >= 0), else nullopt.
  std::optional<std::uint64_t> as_unsigned() const { return is_number() ? m_unsigned : std::nullopt; }
  const std::string& as_string() const; // "" unless a string
  const Array& items() const;           // empty unless an array
  const Object& members() const;        // empty unless an object

  // The member `name` of an object, or nullptr (also for non-objects).
  const Json* find(std::string_view name) const;
  // The string member `name`, or nullopt when absent or not a string.
  std::optional<std::string> string_at(std::string_view name) const;

  // Appending to an array / object; a null value first becomes one. set()
  // replaces an existing member of that name; add() appends without looking
  // (for building, where names are known to be distinct).
  Json& push_back(Json item);
  Json& set(std::string name, Json value);
  Json& add(std::string name, Json value);

  // Compact JSON text: no spaces, members in order, unsigned integers
  // exactly and other integral numbers below 2^53 without a fraction, NaN
  // and infinities as null, invalid UTF-8 as U+FFFD. Never throws (but for
  // std::bad_alloc).
  std::string dump() const;

private:
  Type m_type = Type::null;
  bool m_bool = false;
  double m_number = 0;                     // also set (rounded) for an exact unsigned integer
  std::optional<std::uint64_t> m_unsigned; // the exact value of make_unsigned's numbers
  std::string m_string;
  Array m_items;
  Object m_members;
};

struct JsonError {
  std::size_t offset = 0; // byte offset of the problem in the input
  std::string message;    // "nesting too deep", "syntax error while parsing value - invalid literal"...
};

// Parse one JSON document (surrounding whitespace allowed). More than
// `max_depth` nested arrays and objects is an error (values are freed and
// dumped recursively). nullopt on any error, described in `error`.
std::optional<Json> parse_json(std::string_view text, JsonError* error = nullptr, int max_depth = 64);

// parse_json for files people edit by hand that their program reads with
// comments allowed (gemini-cli's settings.json): // and /* */ are skipped.
std::optional<Json> parse_json_with_comments(std::string_view text, JsonError* error = nullptr);

} // namespace keyshim::util

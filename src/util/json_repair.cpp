#include "util/json_repair.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace keyshim::util::detail {
namespace {

// The offset just past the string that opens at `open`, or text.size() when
// it is not closed. A backslash escapes the byte after it.
std::size_t string_end(std::string_view text, std::size_t open) {
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return text.size();
}

bool is_number_byte(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The test nlohmann-json applies: strtod gives an infinity. (Underflow gives
// 0 or a subnormal, which it accepts.) keyshim never changes the C locale.
bool overflows(std::string_view token, bool& negative) {
  std::string copy(token);
  double value = std::strtod(copy.c_str(), nullptr);
  negative = value < 0;
  return std::isinf(value);
}

std::optional<unsigned> hex4(std::string_view text, std::size_t at) {
  if (text.size() < at + 4) {
    return std::nullopt;
  }
  unsigned value = 0;
  const char* first = text.data() + at;
  auto [end, ec] = std::from_chars(first, first + 4, value, 16);
  return ec == std::errc() && end == first + 4 ? std::optional(value) : std::nullopt;
}

bool is_high_surrogate(std::optional<unsigned> unit) {
  return unit && *unit >= 0xD800 && *unit <= 0xDBFF;
}

bool is_low_surrogate(std::optional<unsigned> unit) {
  return unit && *unit >= 0xDC00 && *unit <= 0xDFFF;
}

// In one string token (quotes and escapes as written), every \uD8xx-\uDFxx
// escape that is not half of a high-low pair becomes \ufffd: same length.
void replace_lone_surrogates(std::string& token) {
  for (std::size_t i = 0; i + 1 < token.size(); ++i) {
    if (token[i] != '\\') {
      continue;
    }
    if (token[i + 1] != 'u') {
      ++i; // the escaped byte
      continue;
    }
    std::optional<unsigned> unit = hex4(token, i + 2);
    if (!unit) {
      continue; // invalid; nlohmann-json reports it
    }
    bool paired = is_high_surrogate(unit) && token.compare(i + 6, 2, "\\u") == 0 &&
                  is_low_surrogate(hex4(token, i + 8));
    if (paired) {
      i += 11;
      continue;
    }
    if (is_high_surrogate(unit) || is_low_surrogate(unit)) {
      token.replace(i, 6, "\\ufffd");
    }
    i += 5;
  }
}

// The token with invalid UTF-8 replaced by U+FFFD: nlohmann-json's serializer
// replaces it (and escapes the rest), its parser gives the bytes back.
std::string valid_utf8(const std::string& token) {
  bool ascii =
      std::all_of(token.begin(), token.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    return token;
  }
  using nlohmann::json;
  std::string literal = json(token).dump(-1, ' ', false, json::error_handler_t::replace);
  json back = json::parse(literal, nullptr, false);
  return back.is_string() ? back.get<std::string>() : token;
}

} // namespace

std::size_t RepairedJson::original_offset(std::size_t offset, std::size_t original_size) const {
  std::ptrdiff_t growth = 0;
  for (const Shift& shift : shifts) {
    if (shift.end > offset) {
      break;
    }
    growth = shift.growth;
  }
  auto original = static_cast<std::ptrdiff_t>(offset) - growth;
  return std::min(original_size, static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, original)));
}

RepairedJson repair_json(std::string_view text) {
  RepairedJson out;
  out.text.reserve(text.size());
  std::size_t numbers = 0;
  std::ptrdiff_t growth = 0;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '"') {
      std::size_t end = string_end(text, i);
      std::string token(text.substr(i, end - i));
      replace_lone_surrogates(token);
      token = valid_utf8(token);
      out.changed = out.changed || token != text.substr(i, end - i);
      out.text += token;
      if (static_cast<std::ptrdiff_t>(token.size()) != static_cast<std::ptrdiff_t>(end - i)) {
        growth += static_cast<std::ptrdiff_t>(token.size()) - static_cast<std::ptrdiff_t>(end - i);
        out.shifts.push_back({out.text.size(), growth});
      }
      i = end;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t end = i;
      while (end < text.size() && is_number_byte(text[end])) {
        ++end;
      }
      std::string_view token = text.substr(i, end - i);
      bool negative = false;
      if (overflows(token, negative)) {
        // "0" and spaces: the same length, so offsets stay; the reader
        // puts the clamped value in its place.
        out.clamps.push_back({numbers, negative});
        out.text += '0';
        out.text.append(token.size() - 1, ' ');
        out.changed = true;
      } else {
        out.text += token;
      }
      ++numbers;
      i = end;
    } else {
      out.text += c;
      ++i;
    }
  }
  return out;
}

std::size_t too_deep_at(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      i = string_end(text, i) - 1;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return i;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return text.size();
}

} // namespace keyshim::util::detail

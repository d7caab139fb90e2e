// The JSON reader parses provider error bodies and event payloads: upstream
// text. It must never crash or throw, whatever the depth or bytes, and what it
// accepts must dump to JSON it accepts again, unchanged (/status is written
// with dump). The writer must turn any bytes into a string it reads back.
#include "fuzz_check.hpp"
#include "util/json.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using keyshim::util::Json;
  using keyshim::util::parse_json;
  std::string_view text(reinterpret_cast<const char*>(data), size);

  // Any bytes as a string value: the dump is JSON (invalid UTF-8 replaced).
  std::optional<Json> quoted = parse_json(Json::make_string(std::string(text)).dump());
  KEYSHIM_FUZZ_CHECK(quoted.has_value() && quoted->is_string());
  KEYSHIM_FUZZ_CHECK(quoted->as_string().size() <= 3 * size);

  keyshim::util::JsonError error;
  std::optional<Json> value = parse_json(text, &error);
  if (!value) {
    KEYSHIM_FUZZ_CHECK(error.offset <= size && !error.message.empty());
    return 0;
  }
  std::string dumped = value->dump();
  std::optional<Json> again = parse_json(dumped);
  KEYSHIM_FUZZ_CHECK(again.has_value());
  KEYSHIM_FUZZ_CHECK(again->dump() == dumped);
  return 0;
}

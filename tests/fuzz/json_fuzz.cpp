// The JSON reader parses provider error bodies and event payloads: upstream
// text. It must never crash, whatever the depth or bytes, and what it accepts
// must dump to JSON it accepts again, unchanged (/status is written with dump).
#include "fuzz_check.hpp"
#include "util/json.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using keyshim::util::parse_json;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  keyshim::util::JsonError error;
  std::optional<keyshim::util::Json> value = parse_json(text, &error);
  if (!value) {
    KEYSHIM_FUZZ_CHECK(error.offset <= size && !error.message.empty());
    return 0;
  }
  std::string dumped = value->dump();
  std::optional<keyshim::util::Json> again = parse_json(dumped);
  KEYSHIM_FUZZ_CHECK(again.has_value());
  KEYSHIM_FUZZ_CHECK(again->dump() == dumped);
  return 0;
}

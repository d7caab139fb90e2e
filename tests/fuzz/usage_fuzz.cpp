// The usage meter reads every relayed response body and the model reader
// every request body: upstream and client bytes. Neither may crash; the meter
// must read the same usage however an uncompressed body is split, and a
// model name, when found, must be one keyshim can print and key on.
#include "fuzz_check.hpp"
#include "policy/request_model.hpp"
#include "policy/usage_meter.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  // Byte 0 picks the kind of body, byte 1 the piece size; the rest is the body.
  static constexpr std::string_view k_types[] = {"text/event-stream", "application/json", ""};
  static constexpr std::string_view k_encodings[] = {"", "gzip", "deflate", "br", "zstd"};
  std::string_view type = k_types[data[0] % 3];
  std::string_view encoding = k_encodings[(data[0] / 3) % 5];
  std::size_t piece = 1 + data[1] % 97;
  std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  keyshim::policy::UsageMeter whole(type, encoding);
  whole.feed(body);
  keyshim::policy::Usage expected = whole.finish();
  keyshim::policy::UsageMeter split(type, encoding);
  for (std::size_t at = 0; at < body.size(); at += piece) {
    split.feed(body.substr(at, piece));
  }
  // Uncompressed, the split must not matter. A corrupt compressed body keeps
  // the counts read before the damage, and how much a decoder hands out
  // before it notices depends on where the pieces end: there only "no crash".
  keyshim::policy::Usage pieces = split.finish();
  if (encoding.empty()) {
    KEYSHIM_FUZZ_CHECK(pieces == expected);
  }

  if (std::optional<std::string> model = keyshim::policy::request_model("/v1beta/models/x:y", body)) {
    KEYSHIM_FUZZ_CHECK(!model->empty() && model->size() <= keyshim::policy::k_max_model_name);
    KEYSHIM_FUZZ_CHECK(
        std::all_of(model->begin(), model->end(), [](char c) { return c > 0x20 && c < 0x7f; }));
  }
  return 0;
}

#include "relay/replay_request.hpp"

#include "relay/header_rules.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace keyshim::relay {
namespace {

// The one value of the field `name`; nullopt when absent. `twice` is set
// when it appears more than once.
std::optional<std::string_view> only_value(const RequestHead& request, std::string_view name, bool& twice) {
  std::optional<std::string_view> found;
  for (const auto& field : request) {
    // Neither keyshim field is a name Beast knows: the known ones are skipped
    // by their enum, without a compare.
    if (field.name() == http::field::unknown && util::iequals(field.name_string(), name)) {
      twice = twice || found.has_value();
      found = util::trim(field.value());
    }
  }
  return found;
}

std::optional<std::uint64_t> positive_id(std::string_view text) {
  std::uint64_t id = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (text.empty() || ec != std::errc() || ptr != end || id == 0) {
    return std::nullopt;
  }
  return id;
}

Answer bad_field(const config::PoolConfig& pool, const std::string& message) {
  return api_error_answer(pool.upstream.auth, 400, message, "keyshim_bad_replay_field", "invalid_request");
}

std::string labels_of(const pool::KeyPool& keys) {
  std::string labels;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    labels += fmt::format("{}\"{}\"", labels.empty() ? "" : ", ", keys.key(i).label);
  }
  return labels;
}

} // namespace

ReplayRequest read_replay_request(const RequestHead& request, const pool::KeyPool& keys,
                                  const config::PoolConfig& pool) {
  ReplayRequest out;
  bool twice = false;
  std::optional<std::string_view> replay = only_value(request, k_replay_field, twice);
  std::optional<std::string_view> label = only_value(request, k_key_field, twice);
  if (twice) {
    out.refusal = bad_field(pool, "keyshim: keyshim-replay and keyshim-key may each be given once");
    return out;
  }
  if (replay) {
    out.replay_of = positive_id(*replay);
    if (!out.replay_of) {
      out.refusal = bad_field(pool, "keyshim: keyshim-replay must be a capture id (a positive integer)");
      return out;
    }
  }
  if (label) {
    out.pinned = keys.index_of_label(*label);
    if (!out.pinned) {
      // The label is the user's own text, but it is echoed only as far as it
      // is printable: this is an HTTP answer.
      std::string shown;
      for (char c : label->substr(0, 64)) {
        shown += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
      }
      out.refusal =
          bad_field(pool, fmt::format("keyshim: pool \"{}\" has no key labelled \"{}\"; its keys are {}",
                                      pool.name, shown, labels_of(keys)));
    }
  }
  return out;
}

} // namespace keyshim::relay

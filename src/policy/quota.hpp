#pragma once
// The rate limits a provider reports on every response, and what a spent one
// means (docs/behaviour.md §4.1): OpenAI's `x-ratelimit-*`, Anthropic's
// `anthropic-ratelimit-*` and its unified subscription headers. Pure: the
// relay hands over header names and values and the time.
#include "policy/types.hpp"
#include "util/clock.hpp"
#include "util/quota_figures.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::policy {

using util::k_quota_kinds;
using util::QuotaFigures;
using util::QuotaKind;
using util::to_string;

// Every limit of one response, indexed by QuotaKind. The unified limit of a
// Claude subscription is given in per cent: limit 100, remaining 100 minus
// the highest window utilisation, 0 when its status is `rejected`.
struct Quota {
  std::array<QuotaFigures, k_quota_kinds> kinds{};

  QuotaFigures& operator[](QuotaKind kind) { return kinds.at(static_cast<std::size_t>(kind)); }
  const QuotaFigures& operator[](QuotaKind kind) const { return kinds.at(static_cast<std::size_t>(kind)); }
};

// Reads a response head's rate-limit fields. add() runs for every field of
// every response, so it only compares the first bytes of a name unless the
// name has a rate-limit prefix, keeps views of the values (the head must
// outlive the reader) and allocates nothing; read() parses them.
class QuotaReader {
public:
  enum class Figure { limit, remaining, reset };

  // Whether a field named `name` may be a rate limit. Most are not, and
  // their first bytes tell: "x-ratelimit-..." or "anthropic-ratelimit-...".
  static bool candidate(std::string_view name) {
    const auto lower = [&](std::size_t i) { return static_cast<char>(name[i] | 0x20); };
    return name.size() > 12 && ((lower(0) == 'x' && name[1] == '-') || (lower(0) == 'a' && lower(1) == 'n'));
  }
  void add(std::string_view name, std::string_view value) {
    if (candidate(name)) {
      add_named(name, value);
    }
  }
  // Whether any rate-limit field was seen (read() may still find them all garbage).
  bool seen() const { return m_seen; }
  // The figures, with OpenAI's relative resets placed after `now`. Values
  // that are not plain counts of at most 15 digits, resets more than a day
  // in the past or 31 days ahead, and other garbage are ignored. nullopt
  // when no figure is left.
  std::optional<Quota> read(util::TimePoint now) const;

private:
  void add_named(std::string_view name, std::string_view value);
  bool add_lowercase(std::string_view name, std::string_view value);
  void keep(QuotaKind kind, Figure figure, std::string_view value);
  std::string_view& slot(QuotaKind kind, Figure figure);
  const std::string_view& slot(QuotaKind kind, Figure figure) const;
  void add_anthropic(std::string_view rest, std::string_view value);
  void add_unified(std::string_view rest, std::string_view value);

  std::array<std::string_view, k_quota_kinds * 3> m_values{}; // the first of each field
  std::string_view m_unified_status;
  double m_utilization = -1; // the highest unified window's, 0..1; < 0: none
  bool m_seen = false;
};

// A key whose provider says a limit has nothing left rests until it resets,
// without spending a 429 on it.
struct SetAside {
  milliseconds wait{0};
  std::string reason; // "quota: 0 requests left", "quota: unified limit reached"
};

// How long `quota` says the key must rest: among the limits with nothing
// remaining, the longest wait until a reset (a limit whose reset passed is
// whole again; one without a reset rests 60 s), at most `max`. nullopt when
// every limit has something left.
std::optional<SetAside> quota_set_aside(const Quota& quota, util::TimePoint now, milliseconds max);

} // namespace keyshim::policy

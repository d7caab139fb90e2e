#include "cli/top_text.hpp"

#include "cli/status_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace keyshim::cli::top {
namespace {

bool continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The byte offset where column `width` starts (the size when shorter).
std::size_t offset_of_column(std::string_view text, std::size_t width) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!continuation(text[i])) {
      if (seen == width) {
        return i;
      }
      ++seen;
    }
  }
  return text.size();
}

// "0s", "29s", "1m 5s", "6h 12m", "3d 4h": two units at most, as
// util::format_duration, but whole seconds, so a countdown ticks evenly.
std::string whole_seconds(long long s) {
  s = std::max(s, 0LL);
  if (s < 60) {
    return fmt::format("{}s", s);
  }
  if (s < 3600) {
    return s % 60 ? fmt::format("{}m {}s", s / 60, s % 60) : fmt::format("{}m", s / 60);
  }
  if (s < 86'400) {
    return (s % 3600) / 60 ? fmt::format("{}h {}m", s / 3600, (s % 3600) / 60) : fmt::format("{}h", s / 3600);
  }
  return (s % 86'400) / 3600 ? fmt::format("{}d {}h", s / 86'400, (s % 86'400) / 3600)
                             : fmt::format("{}d", s / 86'400);
}

} // namespace

std::size_t columns(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !continuation(c); }));
}

std::string fit(std::string_view text, std::size_t width) {
  std::string out(text.substr(0, offset_of_column(text, width)));
  out.append(width - columns(out), ' ');
  return out;
}

void clip(Line& line, std::size_t width) {
  std::size_t used = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    std::size_t span = columns(line[i].text);
    if (used + span > width) {
      line[i].text.resize(offset_of_column(line[i].text, width - used));
      line.resize(i + 1);
      return;
    }
    used += span;
  }
}

std::vector<std::string> wrap(const std::string& text, std::size_t width, std::size_t most) {
  std::vector<std::string> lines;
  std::string_view rest = text;
  while (!rest.empty() && lines.size() < most) {
    std::size_t cut = offset_of_column(rest, width);
    if (cut < rest.size() && lines.size() + 1 < most) {
      std::size_t space = rest.substr(0, cut + 1).rfind(' ');
      cut = space != std::string_view::npos && space > 0 ? space : cut;
    }
    lines.emplace_back(rest.substr(0, cut));
    rest.remove_prefix(cut);
    while (!rest.empty() && rest.front() == ' ') {
      rest.remove_prefix(1);
    }
  }
  return lines;
}

std::vector<Line> flow(const std::vector<Line>& pieces, std::size_t width) {
  std::vector<Line> lines(1);
  std::size_t used = 0;
  for (const Line& piece : pieces) {
    std::size_t size = columns(plain(piece));
    if (used > 0 && used + 2 + size > width) {
      lines.emplace_back();
      used = 0;
    }
    if (used > 0) {
      lines.back().push_back({"  ", Style::plain});
      used += 2;
    }
    lines.back().insert(lines.back().end(), piece.begin(), piece.end());
    used += size;
  }
  return lines;
}

std::string compact(std::uint64_t n) {
  constexpr std::array<const char*, 4> k_units = {"", "k", "M", "G"};
  double value = static_cast<double>(n);
  std::size_t unit = 0;
  while (value >= 1000 && unit + 1 < k_units.size()) {
    value /= 1000;
    ++unit;
  }
  if (unit == 0) {
    return std::to_string(n);
  }
  return value < 100 ? fmt::format("{:.1f}{}", std::floor(value * 10) / 10, k_units[unit])
                     : fmt::format("{:.0f}{}", std::floor(value), k_units[unit]);
}

std::string countdown(Millis left) {
  return whole_seconds(std::chrono::ceil<std::chrono::seconds>(left).count());
}

std::string elapsed(Millis past) {
  return whole_seconds(std::chrono::floor<std::chrono::seconds>(past).count());
}

std::string ago(Millis past) {
  return elapsed(past) + " ago";
}

std::string gauge_amount(const Gauge& gauge) {
  auto whole = [](double n) { return compact(static_cast<std::uint64_t>(std::max(0.0, n))); };
  return gauge.kind == "quota"
             ? fmt::format("{} of {} left", whole(gauge.limit - gauge.used), whole(gauge.limit))
             : fmt::format("{} of {} used", whole(gauge.used), whole(gauge.limit));
}

std::string first_line(const std::string& text) {
  std::size_t end = text.find('\n');
  if (end == std::string::npos || end + 1 >= text.size()) {
    return printable(text.substr(0, end));
  }
  auto more = std::count(text.begin() + static_cast<std::ptrdiff_t>(end) + 1, text.end(), '\n') +
              (text.back() == '\n' ? 0 : 1);
  return printable(text.substr(0, end)) + fmt::format(" ({} more line{})", more, more == 1 ? "" : "s");
}

std::string bar(double used, double limit, std::size_t width) {
  std::size_t inside = width > 2 ? width - 2 : 0;
  double share = limit > 0 ? std::clamp(used / limit, 0.0, 1.0) : 0.0;
  auto filled = static_cast<std::size_t>(std::lround(share * static_cast<double>(inside)));
  return "[" + std::string(filled, '#') + std::string(inside - filled, '-') + "]";
}

std::string rate_text(const std::optional<double>& per_minute) {
  if (!per_minute) {
    return "-";
  }
  return *per_minute < 100 ? fmt::format("{:.1f}", *per_minute) : fmt::format("{:.0f}", *per_minute);
}

std::string last_error_text(const KeyRow& key, Millis age, std::size_t width) {
  if (!key.last_error) {
    return "-";
  }
  const LastError& last = *key.last_error;
  std::string status = last.status ? std::to_string(last.status) : "net";
  std::string whole = ago(last.ago + age) + " " + (last.reason.empty() ? status : last.reason);
  return columns(whole) <= width ? whole : elapsed(last.ago + age) + " " + status;
}

std::string flight_text(const KeyRow& key) {
  return key.max_concurrent > 0 ? fmt::format("{}/{}", key.in_flight, key.max_concurrent)
                                : std::to_string(key.in_flight);
}

Style state_style(const std::string& state) {
  if (state == "available") {
    return Style::good;
  }
  return state == "disabled" ? Style::bad : Style::warn;
}

} // namespace keyshim::cli::top

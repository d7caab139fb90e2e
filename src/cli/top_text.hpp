#pragma once
// Internal to cli/: the text pieces `keyshim top` builds its frames from.
// A column is one UTF-8 character: labels are the user's, and a cut never
// splits a character.
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::cli::top {

// The columns `text` takes.
std::size_t columns(std::string_view text);
// `text` cut to `width` columns, or padded with spaces to exactly `width`.
std::string fit(std::string_view text, std::size_t width);
// `line` cut to `width` columns.
void clip(Line& line, std::size_t width);

// `text` in lines of at most `width` columns, broken at spaces where it can,
// `most` lines at most (the last one cut).
std::vector<std::string> wrap(const std::string& text, std::size_t width, std::size_t most);

// `pieces` side by side, two spaces apart, while they fit in `width`
// columns, else on the next line.
std::vector<Line> flow(const std::vector<Line>& pieces, std::size_t width);

// 950, 12.3k, 4.5M, 1.2G.
std::string compact(std::uint64_t n);
// A countdown in whole seconds, rounded up so it shows 0s only when over:
// "29s", "1m 5s", "6h 12m".
std::string countdown(Millis left);
// A time gone by in whole seconds: "12s", "4m 2s".
std::string elapsed(Millis past);
// The same, ago: "12s ago".
std::string ago(Millis past);
// "[####------]" for `used` of `limit` in `width` columns (brackets included).
std::string bar(double used, double limit, std::size_t width);
// A quota counts what is left, an own limit what is used: "70 of 100
// left", "2 of 10 used".
std::string gauge_amount(const Gauge& gauge);
// The first line of `text`, with "(N more lines)" when there are more.
std::string first_line(const std::string& text);
// "3.0", "12", "-" when unknown.
std::string rate_text(const std::optional<double>& per_minute);
// A key's last error in `width` columns: "12s ago 429 Retry-After", or
// when the reason does not fit, "12s 429" ("net" for a transport failure);
// "-" when none.
std::string last_error_text(const KeyRow& key, Millis age, std::size_t width);
// "1/4", "1" when unlimited.
std::string flight_text(const KeyRow& key);
// The state's style: good, warn or bad.
Style state_style(const std::string& state);

} // namespace keyshim::cli::top

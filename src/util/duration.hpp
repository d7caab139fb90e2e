#pragma once
// Durations as users write them ("250ms", "10s", "5m", "1h") and as keyshim
// prints them ("6h 12m", "18s", "412ms").
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::util {

// "250ms", "10s", "1.5s", "5m", "1h", "2d", or a combination like "1h30m".
// nullopt when the text is not a duration.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Compact human form, two units at most: "412ms", "8.1s", "18s", "6m 5s", "6h 12m", "3d 4h".
std::string format_duration(std::chrono::milliseconds d);

} // namespace keyshim::util

#pragma once
// Parsers for the small value languages of the pool file that are not
// addresses: auth styles, strategies, byte sizes and labels.
#include "config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::config {

// "bearer" | "x-api-key" | "x-goog-api-key" | "api-key" | "query:NAME". nullopt with `error` set otherwise.
std::optional<Auth> parse_auth(std::string_view text, std::string& error);

// "ordered" | "round-robin" | "least-recently-used". nullopt with `error` set otherwise.
std::optional<Strategy> parse_strategy(std::string_view text, std::string& error);

// "off" | "errors" | "all". nullopt with `error` set otherwise.
std::optional<CaptureMode> parse_capture_mode(std::string_view text, std::string& error);

// "512", "512B", "512KiB", "64MiB", "1GiB" -> bytes. nullopt when not a size.
std::optional<std::uint64_t> parse_size(std::string_view text);

// "60", "1500", "200K", "1.5M", "2G" (K, M, G: thousands, millions,
// billions) -> a whole count. nullopt when not one, or too large.
std::optional<std::uint64_t> parse_count(std::string_view text);

// "HH:MM" from "00:00" to "23:59" -> minutes after midnight. nullopt otherwise.
std::optional<int> parse_time_of_day(std::string_view text);

// "local" | "UTC" | "+HH:MM" | "-HH:MM" (at most 14 hours). nullopt with `error` set otherwise.
std::optional<DayZone> parse_day_zone(std::string_view text, std::string& error);

// Why `label` cannot be used (it travels in log lines as key=LABEL), or "" when it can.
std::string label_problem(std::string_view label);

// Why `material` cannot be sent as a key in an HTTP header, or "" when it can.
// Never includes the material itself.
std::string key_material_problem(std::string_view material);

} // namespace keyshim::config

#pragma once
// What a key_cmd prints. Either a bare key or token on its first line (`pass
// show`, `gcloud auth print-access-token`), or a JSON object holding a token
// and when it expires: `az account get-access-token -o json`, an OAuth token
// endpoint's answer, `gcloud config config-helper --format=json`. Pure: the
// time comes in as an argument. Nothing here ever puts the output, or any
// part of it, into a message.
#include "util/clock.hpp"
#include "util/secret.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace keyshim::config {

struct TokenOutput {
  util::Secret token;
  std::optional<util::TimePoint> expires; // when the output says the token stops working
};

// The token `output` holds, and its expiry when it reports one. Output whose
// first non-blank character is `{` is read as JSON: the token is the string
// member access_token, accessToken or token (of the object, or of its
// "credential" object, as gcloud's config-helper nests it); the expiry the
// earliest of expires_in (seconds from `now`), expires_on (seconds since the
// epoch, as az writes it) and expiresOn, expires_at, expiry, token_expiry or
// expiration (RFC 3339, or az's local "2026-12-02 19:00:00.000000"). Any other
// output is a bare key: its first line, trailing whitespace trimmed, no
// expiry. nullopt with `problem` (the rest of `printed ...`) when there is no
// token to take.
std::optional<TokenOutput> read_token_output(std::string_view output, util::TimePoint now,
                                             std::string& problem);

// A time as token commands write expiries: RFC 3339 ("2026-12-02T19:00:00Z",
// with a fraction or a "+01:00" offset), or without a zone (az's "2026-12-02
// 19:00:00.000000", "T" or a space between date and time) as local time.
std::optional<util::TimePoint> parse_expiry_time(std::string_view text);

// The first non-blank line of a command's stderr, fit for a log line and
// status: control characters as spaces, trimmed, at most `max` bytes (cut at
// a character boundary, "..." appended). "" when it printed nothing.
std::string first_error_line(std::string_view errors, std::size_t max = 200);

} // namespace keyshim::config

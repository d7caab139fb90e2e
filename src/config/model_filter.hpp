#pragma once
// Which models a key serves: its `models` and `exclude_models` glob patterns,
// matched against the model a request names (policy::request_model). Pure.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::config {

// True when `text` matches `pattern`: `*` is any run of characters (also
// none), `?` exactly one, anything else itself, ASCII letters in any case.
bool glob_match(std::string_view pattern, std::string_view text);

// Why `pattern` cannot be a model pattern (empty, or a byte no model name
// keyshim reads has: a space, a control byte, non-ASCII), or "" when it can.
std::string model_pattern_problem(std::string_view pattern);

struct ModelFilter {
  std::optional<std::vector<std::string>> models; // nullopt: every model
  std::vector<std::string> exclude_models;

  // False when the key serves every model: then serves() is always true.
  bool restricted() const { return models.has_value() || !exclude_models.empty(); }
  // A model is served when it matches a `models` pattern (or there is no
  // list) and no `exclude_models` pattern.
  bool serves(std::string_view model) const;
  // "gpt-4o*, o3* except gpt-4o-audio*", "every model except o1*", or ""
  // when not restricted: for check and status.
  std::string text() const;
  bool operator==(const ModelFilter&) const = default;
};

} // namespace keyshim::config

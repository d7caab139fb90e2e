#pragma once
// One TOML value -> one SettingValue, checked against its setting's type and
// bounds. Internal to the config layer (toml++ stays here).
#include "config/settings_table.hpp"

#include <toml++/toml.h>

#include <string>

namespace keyshim::config {

struct Decoded {
  std::optional<SettingValue> value;
  std::string error; // when !value: the rest of `"NAME" ...`, e.g. "must be a string, not an integer"
};

// Decode `node` as `setting`. Relative file paths resolve against `base_dir`.
// Errors for secret settings never include the value.
Decoded decode_setting(const Setting& setting, const toml::node& node, const std::string& base_dir);

// "a string", "an integer", ...: how a TOML value's type is named in messages.
std::string describe_node_type(const toml::node& node);

} // namespace keyshim::config

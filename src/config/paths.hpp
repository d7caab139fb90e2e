#pragma once
#include <string>
#include <string_view>

namespace keyshim::config {

// Where keyshim looks for the pool file when no -c FILE is given, as --help
// and the man pages say it; default_config_path() follows it.
inline constexpr std::string_view k_default_config_rule =
    "$KEYSHIM_CONFIG, else $XDG_CONFIG_HOME/keyshim/keys.toml, else ~/.config/keyshim/keys.toml";

// $KEYSHIM_CONFIG, else $XDG_CONFIG_HOME/keyshim/keys.toml, else ~/.config/keyshim/keys.toml.
std::string default_config_path();

// Where `state = true` keeps health across restarts, as the man page says it.
inline constexpr std::string_view k_state_file_rule =
    "$XDG_STATE_HOME/keyshim/state.json, else ~/.local/state/keyshim/state.json";

// $XDG_STATE_HOME/keyshim/state.json, else ~/.local/state/keyshim/state.json.
std::string state_file_path();

} // namespace keyshim::config

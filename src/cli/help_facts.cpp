#include "cli/help_facts.hpp"

#include "config/paths.hpp"

#include <fmt/format.h>

namespace keyshim::cli {

const std::vector<HelpFact>& exit_codes() {
  static const std::vector<HelpFact> codes = {
      {"0", "ok"},
      {"1", "bad configuration or runtime failure"},
      {"2", "usage error"},
  };
  return codes;
}

const std::vector<HelpFact>& environment_variables() {
  static const std::vector<HelpFact> variables = {
      {"KEYSHIM_CONFIG", "the pool file, when no -c FILE is given"},
      {"XDG_CONFIG_HOME",
       "the directory of the default pool file ($XDG_CONFIG_HOME/keyshim/keys.toml) and of the systemd "
       "user unit `keyshim service install` writes; ~/.config when unset"},
      {"XDG_STATE_HOME", "the directory of the state file that keeps key health across restarts "
                         "($XDG_STATE_HOME/keyshim/state.json); ~/.local/state when unset"},
      {"HOME", "the home directory the default locations start from"},
      {"https_proxy, HTTPS_PROXY",
       "an HTTP proxy for https:// upstreams of a pool without a `proxy` setting, read as curl reads them"},
      {"no_proxy, NO_PROXY", "hosts reached without that proxy, as curl reads them"},
      {"NO_COLOR", "when set and not empty, `keyshim status` and `keyshim top` print without colour"},
      {"TERM", "the terminal `keyshim top` draws on (through ncurses' terminfo)"},
      {"LISTEN_FDS, LISTEN_PID",
       "set by systemd's socket activation: `keyshim serve` serves the passed loopback socket instead of "
       "binding its own, and removes both before any key_cmd runs"},
      {"NOTIFY_SOCKET",
       "set by systemd for a Type=notify service: `keyshim serve` reports READY=1, RELOADING=1, STOPPING=1 "
       "and a STATUS= line there"},
  };
  return variables;
}

std::string help_footer() {
  std::string codes;
  for (const HelpFact& code : exit_codes()) {
    codes += fmt::format("{}{} {}", codes.empty() ? "" : ", ", code.name, code.meaning);
  }
  // Two lines rather than one of 120 characters: the last "else" starts the second.
  std::string rule(config::k_default_config_rule);
  if (std::size_t last = rule.rfind(", else "); last != std::string::npos) {
    rule.replace(last, 2, ",\n");
  }
  return fmt::format("Exit codes: {}.\nPool file: -c FILE, else {}.", codes, rule);
}

} // namespace keyshim::cli

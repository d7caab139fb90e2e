#pragma once
// Asking a running keyshim how its keys are doing: where to find it, its
// GET /status answer, and that answer rendered as the table `keyshim status`
// and `keyshim demo` print. Shared by status, reload and demo.
#include "cli/local_json.hpp"
#include "config/config.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>

namespace keyshim::cli {

// What serve listens on when its pool file is unusable (serve does the same).
inline constexpr const char* k_default_listen = "127.0.0.1:8787";

// The address and client_token of the instance serving `config`.
InstanceAddress instance_of(const config::Config& config);

// Where the instance of `status` and `top` is: the pool file named by
// `config_flag` (or the default one) gives the address and the
// client_token; `listen_flag` ("" for none) overrides the address only.
// Throws std::runtime_error for a bad --listen.
InstanceAddress locate_instance(const std::string& config_flag, const std::string& listen_flag);

// A GET /status answer, or why there is none.
using StatusAnswer = LocalAnswer;

// GET /status (2 s to connect, 5 s to read), presenting the client_token.
// Every failure is a value whose `error` names the address and the fix.
StatusAnswer fetch_status(const InstanceAddress& instance);

// A whole-number member of `object` (JSON numbers are doubles), `fallback`
// when absent or not a number.
long long json_integer(const util::Json& object, std::string_view name, long long fallback = 0);

// `text` with its control characters replaced by '?': a label from the pool
// file or a reason from an upstream cannot move the cursor or recolour.
std::string printable(std::string text);

// "keyshim 0.1.0 on 127.0.0.1:8787, pid 4242, pool file /home/u/.config/keyshim/keys.toml".
std::string render_status_heading(const util::Json& status);

// The key table (LABEL, FINGERPRINT, STATE, RESUMES IN, REASON, OK, ERR,
// LAST, IN FLIGHT), the totals line and, when the pool file is unusable, the
// problem line. States are coloured with ANSI codes only when `colour`.
std::string render_status_table(const util::Json& status, bool colour);

// True when stdout is a terminal and NO_COLOR is unset (https://no-color.org).
bool stdout_wants_colour();

} // namespace keyshim::cli

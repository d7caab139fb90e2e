#include "config/pool_manual.hpp"

#include "config/config.hpp"
#include "config/paths.hpp"
#include "config/settings_reference.hpp"
#include "util/roff.hpp"

#include <fmt/format.h>

namespace keyshim::config {
namespace {

using util::roff::bold;
using util::roff::Page;

constexpr std::string_view k_example = R"([server]
listen = "127.0.0.1:8787"

[pools.openai]                      # served at /openai
base_url = "https://api.openai.com"
strategy = "round-robin"

[[pools.openai.keys]]
label = "personal"
key_env = "OPENAI_KEY_PERSONAL"

[[pools.openai.keys]]
label = "team"
key_cmd = ["pass", "show", "openai/team"]
max_concurrent = 4                  # at most 4 requests in flight on this key

[pools.anthropic]                   # served at /anthropic
base_url = "https://api.anthropic.com"
auth = "x-api-key"
max_wait = "30s"                    # wait up to 30 s for a key instead of a 503

[[pools.anthropic.keys]]
label = "claude"
key_cmd = ["pass", "show", "anthropic/main"]
)";

std::string reserved_names() {
  std::string out;
  for (std::size_t i = 0; i < k_reserved_pool_names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == k_reserved_pool_names.size() ? " and " : ", ";
    out += fmt::format("`{}`", k_reserved_pool_names[i]);
  }
  return out;
}

void describe_file(Page& page) {
  page.section("DESCRIPTION");
  page.paragraph("keyshim(1) reads its keys and settings from one TOML file, the pool file: "
                 "`-c FILE`, else " +
                 std::string(k_default_config_rule) +
                 ". `keyshim init` writes a commented starter file; `keyshim check` validates a file and "
                 "prints its keys; `keyshim reload` (or SIGHUP) makes a running keyshim re-read it. "
                 "keys.example.toml, installed with keyshim's documentation, shows every setting.");
  page.paragraph("Every problem of a file is reported at once, each with its line and column. Unknown "
                 "settings are errors, so a typo never silently changes behaviour. Durations are strings "
                 "such as `250ms`, `10s`, `5m`, `1h`, `2d` or `1h30m`, or whole seconds; sizes are bytes or "
                 "strings such as `64MiB`.");
}

void describe_pools(Page& page) {
  page.section("POOLS");
  page.paragraph("A pool is one upstream API and its keys. The top-level `[upstream]` table and the "
                 "`[[keys]]` entries form the default pool, which serves every request path that no other "
                 "pool claims. Each `[pools.NAME]` table and its `[[pools.NAME.keys]]` entries form the "
                 "pool NAME, served at `/NAME`: a request for /NAME/v1/models goes to that pool's upstream "
                 "as /v1/models. Without a default pool, other paths are answered 404.");
  page.paragraph("A pool takes every upstream setting below, starting from the built-in defaults: a "
                 "named pool does not inherit `[upstream]`, which is the default pool's own. Pool names "
                 "are up to 64 lowercase letters, digits, `-`, `_` and `.`, starting with a letter or "
                 "digit; " +
                 reserved_names() +
                 " are reserved, and so is a name that reads as an API version (`v1`, `v2`, `v1beta`, "
                 "`v1alpha`, `v1beta1`, `v1.0`, ...): its route would capture the paths tools send to the "
                 "default pool.");
  page.paragraph("A key serves only its own pool. Labels must be unique within a pool; the same key may "
                 "sit in two pools, with a health of its own in each. A reload adds, removes and changes "
                 "pools; a key keeps its health and usage counts across it while its pool's name and its "
                 "value stay the same.");
}

void describe_keys(Page& page) {
  page.section("KEYS");
  page.paragraph("Each key comes from exactly one of these settings:");
  page.tagged(bold("key"), "The key itself, written in the file.");
  page.tagged(bold("key_env"), "The name of an environment variable holding the key, read from keyshim's "
                               "own environment: a service does not inherit the variables of a shell.");
  page.tagged(bold("key_cmd"),
              "A command, as an array of the program and its arguments, run without a shell, for at most "
              "10 s; the first line of its output is the key. It runs in its own process group: keyshim "
              "takes what it printed once it exits and kills anything it left running. For a password "
              "manager: `key_cmd = [\"pass\", \"show\", \"openai/team\"]`.");
  page.paragraph("`keyshim env`, `keyshim status` and `keyshim reload` read only the file's settings: "
                 "they neither read key_env nor run key_cmd (the keyshim that serves does). A key's "
                 "`base_url`, `auth`, `ca_file` and `max_concurrent` override its pool's, for mirrors of the "
                 "same API inside one pool.");
  page.paragraph("`models` and `exclude_models` restrict which models a pool's keys serve, as patterns "
                 "matching the whole model name a request names (`*` any run of characters, `?` one, case "
                 "ignored); a key's own list replaces the pool's. A key is never sent a model it does not "
                 "serve, and a model no key of the pool serves is answered 404 without an upstream request.");
  page.paragraph("Limits of your own, `requests_per_minute`, `requests_per_day`, `tokens_per_minute` and "
                 "`tokens_per_day`, set in a pool apply to each of its keys on its own; set on a key, they "
                 "override the pool's. A key that reached one is skipped until the clock minute or the day "
                 "(from `day_start` in `day_zone`) ends. Counts are whole numbers or strings with K, M or G "
                 "such as `200K` or `2M`.");
}

void describe_permissions(Page& page) {
  page.section("PERMISSIONS");
  page.paragraph("As ssh and libpq do with private keys, keyshim refuses a pool file that others could "
                 "read or change: it must be a regular file owned by the user running keyshim, with no "
                 "permission bits for group or other (mode 0600 or 0400), in a directory that group and "
                 "other cannot write. The error says how to fix it, for example `chmod 600 "
                 "~/.config/keyshim/keys.toml`.");
}

} // namespace

std::string_view pool_manual_example() {
  return k_example;
}

std::string pool_manual_roff(std::string_view version) {
  Page page("KEYSHIM-POOL", 5, fmt::format("keyshim {}", version), "File Formats",
            "Generated by keyshim_docgen from src/config (settings_table.cpp); do not edit.");
  page.section("NAME");
  page.text("keyshim-pool - the pool file of keyshim: its keys, pools and settings");
  page.section("SYNOPSIS");
  page.roff_line(util::roff::italic("~/.config/keyshim/keys.toml"));
  describe_file(page);
  describe_pools(page);
  describe_keys(page);
  page.section("SETTINGS");
  settings_reference_roff(page);
  describe_permissions(page);
  page.section("EXAMPLE");
  page.paragraph("Two pools, served at /openai and /anthropic, with their keys in a password manager and "
                 "the environment:");
  page.example(k_example);
  page.section("SEE ALSO");
  page.roff_line(".BR keyshim (1),");
  page.roff_line(".BR chmod (1)");
  return page.str();
}

} // namespace keyshim::config

#include "cli/status_table.hpp"

#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <vector>

namespace keyshim::cli {
namespace {

constexpr const char* k_green = "\033[32m";
constexpr const char* k_yellow = "\033[33m";
constexpr const char* k_red = "\033[31m";
constexpr const char* k_reset = "\033[0m";

constexpr std::size_t k_columns = 9;
using Row = std::array<std::string, k_columns>;
using UsageRow = Row; // LABEL, then requests, failures, tokens in and out: today, since start
constexpr std::size_t k_state_column = 2;

// The problem text spans lines (one per problem in the file): keep them,
// indented under "problem:".
std::string printable_lines(std::string text) {
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    out += (start == 0 ? "" : "\n  ") + printable(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string string_or_dash(const util::Json& object, std::string_view name) {
  std::optional<std::string> value = object.string_at(name);
  return value && !value->empty() ? printable(*value) : "-";
}

std::string integer_or_dash(const util::Json& object, std::string_view name) {
  const util::Json* value = object.find(name);
  if (std::optional<std::uint64_t> exact = value ? value->as_unsigned() : std::nullopt) {
    return std::to_string(*exact); // counters pass 2^53, and a long long
  }
  return value && value->is_number() ? std::to_string(json_integer(object, name)) : "-";
}

Row key_row(const util::Json& key) {
  std::string state = string_or_dash(key, "state");
  std::string resumes_in = "-";
  if (state == "cooling") {
    resumes_in = util::format_duration(std::chrono::milliseconds(json_integer(key, "resumes_in_ms")));
  }
  return {string_or_dash(key, "label"),
          string_or_dash(key, "fingerprint"),
          state,
          resumes_in,
          string_or_dash(key, "reason"),
          integer_or_dash(key, "ok"),
          integer_or_dash(key, "err"),
          integer_or_dash(key, "last_status"),
          integer_or_dash(key, "in_flight")};
}

const char* state_colour(const std::string& state) {
  if (state == "available") {
    return k_green;
  }
  if (state == "cooling") {
    return k_yellow;
  }
  return state == "disabled" ? k_red : nullptr;
}

// Columns padded by the width of their text; colour codes wrap the state
// word only, so they never count toward a width.
std::string render_rows(const std::vector<Row>& rows, bool colour) {
  std::array<std::size_t, k_columns> widths{};
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < k_columns; ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    std::string line;
    for (std::size_t i = 0; i < k_columns; ++i) {
      const char* code = colour && r > 0 && i == k_state_column ? state_colour(row[i]) : nullptr;
      line += code ? fmt::format("{}{}{}", code, row[i], k_reset) : row[i];
      if (i + 1 < k_columns) {
        line.append(widths[i] - row[i].size() + 2, ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back(); // a row with empty last columns (a model under its key)
    }
    out += line + "\n";
  }
  return out;
}

std::string plural(long long n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// "rate_limit 2, server 1", or "-" when nothing failed.
std::string failures_text(const util::Json& usage) {
  std::string out;
  if (const util::Json* failures = usage.find("failures"); failures && failures->is_object()) {
    for (const auto& [name, count] : failures->members()) {
      if (std::optional<std::uint64_t> n = count.as_unsigned(); n && *n > 0) {
        out += fmt::format("{}{} {}", out.empty() ? "" : ", ", printable(name), *n);
      }
    }
  }
  return out.empty() ? "-" : out;
}

// Today's and the since-start usage of one key.
UsageRow usage_row(const util::Json& key) {
  static const util::Json k_none;
  const util::Json* today = key.find("today");
  const util::Json* total = key.find("total");
  const util::Json& d = today ? *today : k_none;
  const util::Json& t = total ? *total : k_none;
  return {string_or_dash(key, "label"),
          integer_or_dash(d, "requests"),
          failures_text(d),
          integer_or_dash(d, "input_tokens"),
          integer_or_dash(d, "output_tokens"),
          integer_or_dash(t, "requests"),
          failures_text(t),
          integer_or_dash(t, "input_tokens"),
          integer_or_dash(t, "output_tokens")};
}

// The limits the key's provider last reported: a row per kind, none for a
// key whose provider never reported any.
void add_quota_rows(std::vector<Row>& rows, const util::Json& key) {
  const util::Json* quota = key.find("quota");
  if (!quota || !quota->is_object()) {
    return;
  }
  for (const auto& [kind, figures] : quota->members()) {
    std::string resets_in = "-";
    if (const util::Json* ms = figures.find("resets_in_ms"); ms && ms->is_number()) {
      long long left = json_integer(figures, "resets_in_ms");
      resets_in = left > 0 ? util::format_duration(std::chrono::milliseconds(left)) : "now";
    }
    rows.push_back({string_or_dash(key, "label"), printable(kind), integer_or_dash(figures, "remaining"),
                    integer_or_dash(figures, "limit"), resets_in, "", "", "", ""});
  }
}

std::optional<std::vector<std::string>> json_strings(const util::Json* list) {
  if (list == nullptr || !list->is_array()) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const util::Json& item : list->items()) {
    out.push_back(printable(item.as_string()));
  }
  return out;
}

// "team serves gpt-4o*, o3* except gpt-4o-audio*", one line per key that
// serves only some models; "" when every key serves every model.
std::string serves_lines(const util::Json& keys) {
  std::string out;
  for (const util::Json& key : keys.items()) {
    const util::Json* serves = key.find("serves");
    if (serves == nullptr || !serves->is_object()) {
      continue;
    }
    config::ModelFilter filter{
        json_strings(serves->find("models")),
        json_strings(serves->find("exclude_models")).value_or(std::vector<std::string>{})};
    out += fmt::format("{} serves {}\n", string_or_dash(key, "label"), filter.text());
  }
  return out;
}

// One row per own limit of each key: its use in the current window
// ("requests 2/2 per minute") and when that window ends.
std::vector<Row> limit_rows(const util::Json& keys) {
  static const util::Json k_none;
  std::vector<Row> rows;
  for (const util::Json& key : keys.items()) {
    const util::Json* limits = key.find("limits");
    for (const util::Json& limit : (limits ? *limits : k_none).items()) {
      std::string name = string_or_dash(limit, "name");
      std::string what = name.substr(0, name.find('_'));
      rows.push_back({string_or_dash(key, "label"),
                      fmt::format("{} {}/{} per {}", what, integer_or_dash(limit, "used"),
                                  integer_or_dash(limit, "limit"), string_or_dash(limit, "per")),
                      util::format_duration(std::chrono::milliseconds(json_integer(limit, "resets_in_ms")))});
    }
  }
  if (!rows.empty()) {
    rows.insert(rows.begin(), Row{"LIMITS", "USE", "RESETS IN"});
  }
  return rows;
}

// One pool: a heading with its route, its health table, the models its keys
// serve when they are restricted, its usage table, the limits its provider
// reported and the use against each key's own limits.
std::string render_pool(const util::Json& pool, bool colour) {
  std::string out = fmt::format("pool {} at {} -> {}\n", string_or_dash(pool, "name"),
                                string_or_dash(pool, "route"), string_or_dash(pool, "upstream"));
  const util::Json* keys = pool.find("keys");
  if (!keys || keys->items().empty()) {
    return out + "\n";
  }
  std::vector<Row> rows = {
      {"LABEL", "FINGERPRINT", "STATE", "RESUMES IN", "REASON", "OK", "ERR", "LAST", "IN FLIGHT"}};
  std::vector<UsageRow> usage = {
      {"USAGE", "TODAY", "FAILED", "IN", "OUT", "SINCE START", "FAILED", "IN", "OUT"}};
  std::vector<Row> quota = {{"QUOTA", "KIND", "LEFT", "LIMIT", "RESETS IN", "", "", "", ""}};
  for (const util::Json& key : keys->items()) {
    rows.push_back(key_row(key));
    // A model cooling on this key, under it: the key still serves the others.
    if (const util::Json* models = key.find("models")) {
      for (const util::Json& model : models->items()) {
        Row row = key_row(model);
        row[0] = "  model " + string_or_dash(model, "model");
        row[1] = "";
        std::fill(row.begin() + 5, row.end(), "");
        rows.push_back(row);
      }
    }
    usage.push_back(usage_row(key));
    add_quota_rows(quota, key);
  }
  out += render_rows(rows, colour) + serves_lines(*keys) + render_rows(usage, false);
  if (quota.size() > 1) {
    out += render_rows(quota, false);
  }
  return out + render_rows(limit_rows(*keys), false) + "\n";
}

} // namespace

// Labels come from the user's file and reasons partly from upstream answers:
// neither may move the cursor or recolour the terminal.
std::string printable(std::string text) {
  for (char& c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      c = '?';
    }
  }
  return text;
}

InstanceAddress instance_of(const config::Config& config) {
  InstanceAddress instance;
  instance.listen = config.server.listen;
  if (config.server.client_token) {
    instance.client_token = config.server.client_token->reveal();
  }
  instance.config_path = config.path;
  return instance;
}

// The pool file gives the address and the client_token; --listen overrides
// the address but the token still comes from the file when it can be read,
// so `status --listen` works against an instance that requires one.
// --listen overrides the address but the token still comes from the file
// when it can be read, so `status --listen` works against an instance that
// requires one.
InstanceAddress locate_instance(const std::string& config_flag, const std::string& listen_flag) {
  std::string path = resolve_config_path(config_flag);
  config::LoadResult loaded = config::load_pool_file(path, config::SecretResolution::skip);
  InstanceAddress instance;
  if (loaded.ok()) {
    instance = instance_of(*loaded.config);
  }
  if (!listen_flag.empty()) {
    std::string error;
    std::optional<config::ListenAddress> listen = config::parse_listen_address(listen_flag, error);
    if (!listen) {
      throw std::runtime_error(fmt::format("--listen {}: {}", listen_flag, error));
    }
    instance.listen = *listen;
    return instance;
  }
  if (!loaded.ok()) {
    // serve falls back to the same address when its file is unusable, so
    // this still finds an instance started from a broken file.
    std::string error;
    instance.listen = *config::parse_listen_address(k_default_listen, error);
    fmt::print(stderr,
               "keyshim: {}: cannot use this pool file, so asking the default address {} (run "
               "`keyshim check -c {}` to see why, or pass --listen)\n",
               path, k_default_listen, path);
  }
  return instance;
}

StatusAnswer fetch_status(const InstanceAddress& instance) {
  StatusAnswer answer = local_get_json(instance, "/status");
  if (!answer.ok()) {
    return answer;
  }
  const std::string where = instance.listen.text();
  if (answer.http_status != 200) {
    answer.json.reset();
    return failed(answer, fmt::format("{} answered GET /status with HTTP {}: is it a keyshim?", where,
                                      answer.http_status));
  }
  const util::Json* pools = answer.json && answer.json->is_object() ? answer.json->find("pools") : nullptr;
  if (!pools || !pools->is_array()) {
    answer.json.reset();
    return failed(answer, fmt::format("{} answered GET /status with something that is not keyshim's "
                                      "status: is another program on that port?",
                                      where));
  }
  return answer;
}

long long json_integer(const util::Json& object, std::string_view name, long long fallback) {
  const util::Json* value = object.find(name);
  if (!value || !value->is_number()) {
    return fallback;
  }
  return std::llround(value->as_number());
}

std::string render_status_heading(const util::Json& status) {
  return fmt::format("keyshim {} on {}, pid {}, pool file {}\n", string_or_dash(status, "version"),
                     string_or_dash(status, "listen"), json_integer(status, "pid"),
                     string_or_dash(status, "config"));
}

std::string render_status_table(const util::Json& status, bool colour) {
  std::string out;
  if (const util::Json* pools = status.find("pools")) {
    for (const util::Json& pool : pools->items()) {
      out += render_pool(pool, colour);
    }
  }
  static const util::Json k_no_totals;
  const util::Json* totals = status.find("totals");
  const util::Json& t = totals ? *totals : k_no_totals;
  out += fmt::format("{}: {} available, {} cooling, {} disabled\n", plural(json_integer(t, "total"), "key"),
                     json_integer(t, "available"), json_integer(t, "cooling"), json_integer(t, "disabled"));
  if (const util::Json* captures = status.find("captures"); captures && captures->is_object()) {
    out += fmt::format("captures: {} of {} kept, {} KiB (keyshim log)\n", json_integer(*captures, "entries"),
                       json_integer(*captures, "size"), (json_integer(*captures, "bytes") + 1023) / 1024);
  }
  std::optional<std::string> problem = status.string_at("problem");
  if (problem && !problem->empty()) {
    out += colour ? fmt::format("{}problem:{} {}\n", k_red, k_reset, printable_lines(*problem))
                  : fmt::format("problem: {}\n", printable_lines(*problem));
  }
  return out;
}

bool stdout_wants_colour() {
  const char* no_colour = std::getenv("NO_COLOR");
  bool opted_out = no_colour != nullptr && *no_colour != '\0';
  return !opted_out && ::isatty(STDOUT_FILENO) == 1;
}

} // namespace keyshim::cli

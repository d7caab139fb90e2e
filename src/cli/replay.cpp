// keyshim replay ID [--key LABEL]: re-send a captured request through the
// running instance, print the answer as it arrives, then compare it with
// what came back the first time (docs/behaviour.md §4.2).
#include "cli/capture_client.hpp"
#include "cli/commands.hpp"
#include "cli/replay_capture.hpp"
#include "cli/status_table.hpp"
#include "policy/usage_meter.hpp"
#include "server/local_client.hpp"
#include "util/ascii.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace keyshim::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The longest silence a replayed answer may have: a reasoning model can
// think for minutes before its first byte.
constexpr int k_read_seconds = 600;
// How much of the replay's body is kept for the comparison and the usage.
constexpr std::size_t k_kept_body = 64 * 1024;

struct ReplayFlags {
  std::string config;
  std::string listen;
  std::string key;
  std::uint64_t id = 0;
};

// Failures before anything was replayed: no instance, no such capture, a
// capture that cannot be replayed. Exit 2, like a usage error.
struct CannotReplay : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string no_instance(const InstanceAddress& instance) {
  return fmt::format("no keyshim answering on {} (start it with `keyshim serve`, or pass -c or --listen "
                     "for the instance that captured the request)",
                     instance.listen.text());
}

CapturedExchange fetch_capture(const InstanceAddress& instance, std::uint64_t id) {
  const std::string path = fmt::format("/captures/{}", id);
  LocalAnswer answer = local_get_json(instance, path);
  if (!answer.ok()) {
    throw CannotReplay(answer.refused ? no_instance(instance) : answer.error);
  }
  const std::optional<util::Json>& json = answer.json;
  if (answer.http_status == 404) {
    std::string why = json ? json->string_at("error").value_or("") : "";
    throw CannotReplay(fmt::format("no capture {} on {}{}{} (`keyshim log` lists the captured requests)", id,
                                   instance.listen.text(), why.empty() ? "" : ": ", printable(why)));
  }
  if (answer.http_status != 200 || !json || !json->is_object()) {
    throw CannotReplay(fmt::format("{} answered GET {} with HTTP {}{}: is it a keyshim with request capture?",
                                   instance.listen.text(), path, answer.http_status,
                                   json ? "" : " and no JSON"));
  }
  std::string error;
  std::optional<CapturedExchange> captured = read_capture(*json, id, error);
  if (!captured) {
    throw CannotReplay(error);
  }
  return std::move(*captured);
}

std::string header_value(const server::HeaderList& headers, std::string_view name) {
  for (const auto& [field, value] : headers) {
    if (util::iequals(field, name)) {
      return value;
    }
  }
  return "";
}

// The answer's bytes go to stdout as they arrive (control characters but
// line ends and tabs shown as '?': an answer cannot drive the terminal).
void print_piece(std::string_view piece) {
  std::string shown(piece);
  for (char& c : shown) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\r' && c != '\t') || byte == 0x7f) {
      c = '?';
    }
  }
  std::fwrite(shown.data(), 1, shown.size(), stdout);
  std::fflush(stdout);
}

// Send the replay, printing as it comes; what came back.
ReplayAnswer send_replay(const InstanceAddress& instance, const server::LocalRequest& request) {
  ReplayAnswer answer;
  std::optional<policy::UsageMeter> meter;
  bool ends_in_newline = true;
  const Clock::time_point start = Clock::now();
  auto on_head = [&](int status, const server::HeaderList& headers) {
    answer.ttfb = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    answer.content_type = header_value(headers, "Content-Type");
    meter.emplace(answer.content_type, header_value(headers, "Content-Encoding"));
    fmt::print("HTTP {}{}\n", status,
               answer.content_type.empty() ? "" : " " + printable(answer.content_type));
    std::fflush(stdout);
  };
  auto on_bytes = [&](std::string_view piece) {
    print_piece(piece);
    ends_in_newline = piece.empty() ? ends_in_newline : piece.back() == '\n';
    meter->feed(piece);
    answer.body_start.append(piece.substr(0, k_kept_body - std::min(k_kept_body, answer.body_start.size())));
  };
  server::LocalResponse sent =
      server::local_send(instance.listen, request, k_read_seconds, on_head, on_bytes);
  answer.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  answer.status = sent.status;
  if (!ends_in_newline) {
    fmt::print("\n");
  }
  if (sent.status == 0 && sent.refused) {
    throw CannotReplay(no_instance(instance));
  }
  answer.error = sent.error;
  if (meter) {
    answer.usage = meter->finish();
  }
  return answer;
}

// The /captures list after capture `after`; none when the instance gives
// none (nothing here stops a replay).
std::optional<util::Json> captures_after(const InstanceAddress& instance, std::uint64_t after) {
  CaptureAnswer list = fetch_captures(instance, captures_path(after, "", std::nullopt));
  return list.ok() ? std::move(list.json) : std::nullopt;
}

// The newest capture's id (0 when there is none or the instance does not
// say), asked before the replay is sent: the capture of the replay comes
// after it, and an earlier replay of the same capture does not.
std::uint64_t newest_capture(const InstanceAddress& instance, std::uint64_t id) {
  std::optional<util::Json> list = captures_after(instance, id);
  const util::Json* last = list ? list->find("last_id") : nullptr;
  return last != nullptr ? last->as_unsigned().value_or(0) : 0;
}

// The key that served the replay, from the instance's capture of it ("" when
// it captured none: a success under capture = "errors"). `since`: the
// newest capture before the replay was sent.
std::string served_key(const InstanceAddress& instance, std::uint64_t id, std::uint64_t since) {
  std::optional<util::Json> list = captures_after(instance, std::max(id, since));
  return list ? replay_key_in(*list, id) : "";
}

int run_replay(const ReplayFlags& flags) {
  try {
    InstanceAddress instance = locate_instance(flags.config, flags.listen);
    CapturedExchange captured = fetch_capture(instance, flags.id);
    server::LocalRequest request = replay_request(captured, flags.key, instance.client_token);
    fmt::print("replaying capture {}: {} {} (pool {}{}) on {}\n", captured.id, printable(captured.method),
               printable(request.target), printable(captured.pool),
               captured.model.empty() ? "" : ", model " + printable(captured.model),
               flags.key.empty() ? "the key keyshim chooses" : "key " + flags.key);
    std::fflush(stdout);
    const std::uint64_t since = newest_capture(instance, flags.id);
    ReplayAnswer answer = send_replay(instance, request);
    if (!answer.error.empty()) {
      fmt::print(stderr, "keyshim: replay: the answer ended early ({})\n", answer.error);
    }
    answer.served_key = served_key(instance, flags.id, since);
    fmt::print("\n{}", render_comparison(captured, answer, flags.key));
    return answer.error.empty() && answer.status >= 200 && answer.status < 300 ? 0 : 1;
  } catch (const std::runtime_error& e) { // CannotReplay, or locate_instance's bad --listen
    fmt::print(stderr, "keyshim: error: {}\n", e.what());
    return 2;
  }
}

} // namespace

Subcommand add_replay(CLI::App& parent) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* app = parent.add_subcommand(
      "replay", "re-send a captured request (see `keyshim log`) through the running keyshim, on the key it "
                "would choose or on the key --key names, print the answer as it arrives and then beside "
                "what came back the first time. Exit 0 when the replay got a 2xx answer, 1 for any other "
                "answer, 2 when nothing could be replayed (no keyshim, no such capture)");
  app->add_option("ID", flags->id, "the capture's id, as `keyshim log` shows it")
      ->required()
      ->check(CLI::PositiveNumber);
  app->add_option("--key", flags->key,
                  "LABEL of the pool's key that serves the replay, alone: no failover, used even while it "
                  "cools or is disabled")
      ->type_name("LABEL");
  add_config_option(*app, flags->config);
  app->add_option("--listen", flags->listen,
                  "ADDR:PORT of the instance to ask (default: the pool file's [server] listen, else " +
                      std::string(k_default_listen) + ")")
      ->type_name("ADDR:PORT");
  return {app, [flags] { return run_replay(*flags); }};
}

} // namespace keyshim::cli

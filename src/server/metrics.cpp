#include "server/metrics.hpp"

#include "keyshim/version.hpp"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <utility>

namespace keyshim::server {
namespace {

using Label = std::pair<std::string_view, std::string_view>;

// {pool="openai",key="team"}, or nothing without labels.
std::string labels(std::initializer_list<Label> list) {
  if (list.size() == 0) {
    return "";
  }
  std::string out = "{";
  for (const Label& label : list) {
    out +=
        fmt::format("{}{}=\"{}\"", out.size() == 1 ? "" : ",", label.first, escape_label_value(label.second));
  }
  return out + "}";
}

// One metric family: its samples are gathered first, because the format
// wants a family's lines together and a family without samples is best left
// out entirely (a bare # TYPE line says nothing a scraper can use).
class Family {
public:
  Family(std::string_view name, std::string_view type, std::string_view help)
      : m_name(name), m_type(type), m_help(help) {}

  template <typename Value> void add(const std::string& label_text, Value value) {
    fmt::format_to(std::back_inserter(m_samples), "{}{} {}\n", m_name, label_text, value);
  }

  void write_to(std::string& out) const {
    if (m_samples.empty()) {
      return;
    }
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{}", m_name, m_help, m_name, m_type,
                   m_samples);
  }

private:
  std::string_view m_name;
  std::string_view m_type;
  std::string_view m_help;
  std::string m_samples;
};

// Seconds from `now` to `until`, 0 once it has passed; milliseconds are as
// fine as cooldowns get.
double seconds_left(util::TimePoint until, util::TimePoint now) {
  if (until <= now) {
    return 0.0;
  }
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()) /
         1000.0;
}

using KeyVisitor = std::function<void(const PoolReport&, const pool::KeySnapshot&, const std::string&)>;

// Calls `visit` for every key of every pool with its {pool,key} labels.
void each_key(const std::vector<PoolReport>& pools, const KeyVisitor& visit) {
  for (const PoolReport& pool : pools) {
    for (const pool::KeySnapshot& key : pool.keys) {
      visit(pool, key, labels({{"pool", pool.name}, {"key", key.label}}));
    }
  }
}

constexpr pool::KeyState k_states[] = {pool::KeyState::available, pool::KeyState::cooling,
                                       pool::KeyState::disabled};

void instance_families(std::string& out, const std::vector<PoolReport>& pools, const InstanceInfo& info) {
  Family version("keyshim_info", "gauge", "The running keyshim's version; always 1.");
  version.add(labels({{"version", k_version}}), 1);
  version.write_to(out);

  Family generation("keyshim_config_generation", "gauge", "Successful loads of the pool file since start.");
  generation.add("", info.generation);
  generation.write_to(out);

  Family usable("keyshim_config_usable", "gauge",
                "1 while the pool file is usable, 0 while every request is answered 503 with the reason.");
  usable.add("", info.problem.empty() ? 1 : 0);
  usable.write_to(out);

  Family keys("keyshim_pool_keys", "gauge", "Keys of each pool by state.");
  for (const PoolReport& pool : pools) {
    const pool::Counts& c = pool.counts;
    for (pool::KeyState state : k_states) {
      int n = state == pool::KeyState::available ? c.available
              : state == pool::KeyState::cooling ? c.cooling
                                                 : c.disabled;
      keys.add(labels({{"pool", pool.name}, {"state", pool::to_string(state)}}), n);
    }
  }
  keys.write_to(out);
}

// What each key is doing now.
void key_gauges(std::string& out, const std::vector<PoolReport>& pools, util::TimePoint now) {
  Family up("keyshim_key_up", "gauge",
            "1 when the key is available for requests, 0 while cooling or disabled.");
  Family state("keyshim_key_state", "gauge", "1 for the key's current state (available, cooling, disabled).");
  Family cooldown("keyshim_key_cooldown_seconds", "gauge",
                  "Seconds until the key's cooldown ends, 0 when not cooling.");
  Family in_flight("keyshim_key_in_flight", "gauge", "Requests using the key now.");
  Family websockets("keyshim_key_websockets", "gauge",
                    "Relayed WebSockets the key opened that are open now.");
  Family sessions("keyshim_key_sessions", "gauge",
                  "Tool sessions (by session id) that use the key, within the pool's session_ttl.");
  each_key(pools, [&](const PoolReport& pool, const pool::KeySnapshot& key, const std::string& ids) {
    const pool::KeyHealth& h = key.health;
    up.add(ids, h.state == pool::KeyState::available ? 1 : 0);
    for (pool::KeyState s : k_states) {
      state.add(labels({{"pool", pool.name}, {"key", key.label}, {"state", pool::to_string(s)}}),
                h.state == s ? 1 : 0);
    }
    cooldown.add(ids, h.state == pool::KeyState::cooling ? seconds_left(h.until, now) : 0.0);
    in_flight.add(ids, h.in_flight);
    websockets.add(ids, h.websockets);
    sessions.add(ids, key.sessions);
  });
  up.write_to(out);
  state.write_to(out);
  cooldown.write_to(out);
  in_flight.write_to(out);
  websockets.write_to(out);
  sessions.write_to(out);

  // Only the models in trouble have an entry: cooling ones with their time
  // left, and ones past their cooldown awaiting their probe with 0.
  Family models("keyshim_model_cooldown_seconds", "gauge",
                "Seconds until a model's cooldown on the key ends; 0 once it ended and a probe is due.");
  each_key(pools, [&](const PoolReport& pool, const pool::KeySnapshot& key, const std::string&) {
    for (const pool::ModelHealth& m : key.health.models) {
      if (m.cooled) {
        models.add(labels({{"pool", pool.name}, {"key", key.label}, {"model", m.model}}),
                   seconds_left(m.until, now));
      }
    }
  });
  models.write_to(out);
}

// The limits each key's provider last reported, one sample per figure it
// reported: keys (and kinds) it never reported have none.
void key_quota_gauges(std::string& out, const std::vector<PoolReport>& pools, util::TimePoint now) {
  Family limit("keyshim_key_quota_limit", "gauge", "The limit the key's provider last reported, by kind.");
  Family remaining("keyshim_key_quota_remaining", "gauge",
                   "What the key's provider last reported remaining of a limit, by kind.");
  Family reset("keyshim_key_quota_reset_seconds", "gauge",
               "Seconds until a limit of the key is whole again, as last reported; 0 once passed.");
  each_key(pools, [&](const PoolReport& pool, const pool::KeySnapshot& key, const std::string&) {
    if (!key.health.quota) {
      return;
    }
    for (std::size_t i = 0; i < pool::k_quota_kinds; ++i) {
      const pool::QuotaFigures& f = key.health.quota->kinds.at(i);
      std::string ids = labels({{"pool", pool.name},
                                {"key", key.label},
                                {"kind", pool::to_string(static_cast<pool::QuotaKind>(i))}});
      if (f.limit) {
        limit.add(ids, *f.limit);
      }
      if (f.remaining) {
        remaining.add(ids, *f.remaining);
      }
      if (f.reset) {
        reset.add(ids, seconds_left(*f.reset, now));
      }
    }
  });
  limit.write_to(out);
  remaining.write_to(out);
  reset.write_to(out);
}

// Each key's own limits that are set: the limit, the use in the current
// window and the seconds until that window ends.
void limit_gauges(std::string& out, const std::vector<PoolReport>& pools, util::TimePoint now) {
  Family limit("keyshim_key_limit", "gauge", "A limit of your own on the key, per minute or per day.");
  Family used("keyshim_key_limit_used", "gauge", "The key's use against that limit in the current window.");
  Family resets("keyshim_key_limit_reset_seconds", "gauge",
                "Seconds until that limit's current window ends.");
  each_key(pools, [&](const PoolReport& pool, const pool::KeySnapshot& key, const std::string&) {
    for (const pool::LimitUse& use : key.limits) {
      std::string ids = labels({{"pool", pool.name}, {"key", key.label}, {"limit", use.name}});
      limit.add(ids, use.limit);
      used.add(ids, use.used);
      resets.add(ids, seconds_left(use.resets, now));
    }
  });
  for (const Family* family : {&limit, &used, &resets}) {
    family->write_to(out);
  }
}

// What each key did since keyshim started (`total`; `today` restarts at
// midnight, which a counter must not do).
void key_counters(std::string& out, const std::vector<PoolReport>& pools) {
  Family attempts("keyshim_key_attempts_total", "counter", "Attempts made with the key.");
  Family failures("keyshim_key_failures_total", "counter",
                  "Failed attempts with the key, by class of failure.");
  Family ok("keyshim_key_responses_ok_total", "counter",
            "Responses from the key that were relayed as successes.");
  Family input("keyshim_key_input_tokens_total", "counter", "Input tokens the key's responses reported.");
  Family output("keyshim_key_output_tokens_total", "counter", "Output tokens the key's responses reported.");
  Family bytes("keyshim_key_response_bytes_total", "counter",
               "Response body bytes relayed to clients from the key's successful responses.");
  each_key(pools, [&](const PoolReport& pool, const pool::KeySnapshot& key, const std::string& ids) {
    const pool::UsageCounts& total = key.health.total;
    attempts.add(ids, total.requests);
    for (std::size_t i = 0; i < pool::k_failure_classes; ++i) {
      failures.add(labels({{"pool", pool.name},
                           {"key", key.label},
                           {"class", pool::to_string(static_cast<pool::FailureClass>(i))}}),
                   total.failures.at(i));
    }
    ok.add(ids, key.health.ok_count);
    input.add(ids, total.input_tokens);
    output.add(ids, total.output_tokens);
    bytes.add(ids, total.bytes);
  });
  for (const Family* family : {&attempts, &failures, &ok, &input, &output, &bytes}) {
    family->write_to(out);
  }
}

} // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string metrics_text(const std::vector<PoolReport>& pools, util::TimePoint now,
                         const InstanceInfo& info) {
  std::string out;
  instance_families(out, pools, info);
  key_gauges(out, pools, now);
  key_quota_gauges(out, pools, now);
  limit_gauges(out, pools, now);
  key_counters(out, pools);
  return out;
}

} // namespace keyshim::server

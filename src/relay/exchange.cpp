#include "relay/exchange.hpp"

#include "policy/request_model.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// Interim responses (103 Early Hints) skipped before the real one.
constexpr int k_max_interim_responses = 8;

std::string path_of(std::string_view target) {
  return std::string(target.substr(0, target.find('?'))); // a query may carry a key
}

} // namespace

Exchange::Exchange(std::shared_ptr<const PoolState> state, const Route& route, ClientRequest request,
                   std::shared_ptr<Downstream> client, RelayContext& context)
    : m_state(std::move(state)), m_served(m_state->pools.at(route.pool)),
      m_settings(m_served.config->upstream), m_pool(*m_served.keys), m_request(std::move(request)),
      m_client(std::move(client)), m_context(context), m_started(context.clock.now()),
      m_timer(m_client->socket().get_executor()) {
  m_client_keep_alive = m_request.keep_alive();
  m_record.method = std::string(m_request.method_string());
  m_record.path = path_of(m_request.target()); // as the client sent it, with the pool's prefix
  m_record.pool = m_served.config->name;
  m_request.target(route.target);
  m_model = policy::request_model(m_request.target(), m_request.body());
  m_record.model = m_model.value_or("");
  m_excluded.assign(m_pool.size(), false);
  m_retried.assign(m_pool.size(), false);
}

void Exchange::start() {
  watch_client();
  // Requests already waiting for this pool's keys go first: one may be
  // free now because a cooldown ended a moment before their timer fires.
  m_context.waits.wake(m_served.config->name);
  choose_key();
}

// Each pass either makes an attempt (bounded by max_attempts) or excludes a
// key for good (bounded by the pool size), so the loop ends.
void Exchange::choose_key() {
  m_phase = Phase::choosing;
  m_watchdog.stop();
  while (m_attempts < m_settings.max_attempts) {
    std::vector<bool> mask = m_excluded;
    if (m_same_key) {
      mask.assign(m_pool.size(), true);
      mask[*m_same_key] = false;
    }
    pool::Selection selection = m_pool.acquire(mask, model());
    if (selection.index) {
      m_holding_probe = selection.probe;
      attempt(*selection.index);
      return;
    }
    if (m_same_key) { // the key went cooling after its failure: move on
      m_excluded[*m_same_key] = true;
      m_same_key.reset();
      continue;
    }
    if (start_waiting(selection)) {
      return;
    }
    if (m_attempts == 0) {
      answer(no_key_answer(selection, waited()));
      return;
    }
    break;
  }
  give_up();
}

// Out of attempts or keys: the last upstream error is the most truthful
// answer; with none (only transport failures), say what each key got.
void Exchange::give_up() {
  answer(m_last_error ? *m_last_error : unreachable_answer(m_tried));
}

void Exchange::attempt(std::size_t index) {
  ++m_attempts;
  ++m_generation;
  m_record.attempts = m_attempts;
  m_holding_key = index;
  m_attempt = Attempt{};
  m_attempt.index = index;
  m_attempt.started = m_context.clock.now();
  const config::KeyConfig& key = m_pool.key(index);
  std::optional<std::size_t> body_size;
  if (!m_request.body().empty() || m_request.has_content_length() || m_request.chunked()) {
    body_size = m_request.body().size();
  }
  m_request_head = upstream_head(
      m_request.base(), upstream_target(m_request.target(), m_served.query_auth_params, key), key, body_size);
  m_attempt.conn = m_context.upstreams.take_idle(UpstreamPool::origin_of(key));
  if (m_attempt.conn) {
    m_attempt.reused = true;
    send_request();
    return;
  }
  connect_fresh();
}

void Exchange::connect_fresh() {
  const config::KeyConfig& key = m_pool.key(m_attempt.index);
  std::string error;
  m_attempt.reused = false;
  m_attempt.conn = m_context.upstreams.make(key, error);
  if (!m_attempt.conn) {
    fail_attempt(policy::TransportFailure::tls, error);
    return;
  }
  m_phase = Phase::connecting;
  arm_deadline(Watchdog::Kind::connect, m_settings.connect_timeout);
  m_attempt.conn->connect(key.base_url, [self = shared_from_this(), generation = m_generation](
                                            ConnectFailure failure, const std::string& detail) {
    self->on_connected(generation, failure, detail);
  });
}

void Exchange::on_connected(unsigned generation, ConnectFailure failure, const std::string& detail) {
  if (generation != m_generation || m_phase != Phase::connecting) {
    return; // a deadline or a hang-up already moved on
  }
  if (failure != ConnectFailure::none) {
    fail_attempt(failure == ConnectFailure::tls ? policy::TransportFailure::tls
                                                : policy::TransportFailure::connect,
                 detail);
    return;
  }
  send_request();
}

void Exchange::send_request() {
  m_phase = Phase::sending;
  arm_deadline(Watchdog::Kind::first_byte, m_settings.first_byte_timeout);
  std::array<asio::const_buffer, 2> buffers = {asio::buffer(m_request_head), asio::buffer(m_request.body())};
  m_attempt.conn->with_stream([&](auto& stream) {
    asio::async_write(stream, buffers,
                      [self = shared_from_this(), conn = m_attempt.conn, generation = m_generation](
                          const ErrorCode& ec, std::size_t) { self->on_request_sent(generation, ec); });
  });
}

void Exchange::on_request_sent(unsigned generation, const ErrorCode& ec) {
  if (generation != m_generation || m_phase != Phase::sending) {
    return;
  }
  if (ec) {
    fail_attempt(policy::TransportFailure::closed_before_response, ec.message());
    return;
  }
  read_head();
}

void Exchange::read_head() {
  m_phase = Phase::awaiting_head;
  m_attempt.parser = std::make_shared<ResponseParser>();
  ResponseParser& parser = *m_attempt.parser;
  parser.header_limit(64 * 1024); // a longer head is a failed attempt, not memory
  parser.body_limit(std::numeric_limits<std::uint64_t>::max()); // never boost::none (Beast 1.74 bug)
  if (m_request.method() == http::verb::head) {
    parser.skip(true);
  }
  m_attempt.conn->with_stream([&](auto& stream) {
    http::async_read_header(
        stream, m_attempt.conn->buffer(), parser,
        [self = shared_from_this(), conn = m_attempt.conn, held = m_attempt.parser,
         generation = m_generation](const ErrorCode& ec, std::size_t) { self->on_head(generation, ec); });
  });
}

void Exchange::on_head(unsigned generation, const ErrorCode& ec) {
  if (generation != m_generation || m_phase != Phase::awaiting_head) {
    return;
  }
  if (ec) {
    fail_attempt(policy::TransportFailure::closed_before_response,
                 ec == http::error::header_limit ? "response head over 64 KiB" : ec.message());
    return;
  }
  int status = static_cast<int>(m_attempt.parser->get().result_int());
  if (status >= 100 && status < 200 && status != 101) {
    if (++m_attempt.interim > k_max_interim_responses) {
      fail_attempt(policy::TransportFailure::closed_before_response, "too many interim responses");
      return;
    }
    read_head(); // an interim response: the real one follows on the same connection
    return;
  }
  on_response_head();
}

void Exchange::fail_attempt(policy::TransportFailure failure, const std::string& detail) {
  // A pooled connection the upstream had closed while idle fails at once,
  // before any byte: that is not the key's fault, so try a fresh connection.
  bool stale = m_attempt.reused && failure == policy::TransportFailure::closed_before_response &&
               !(m_attempt.parser && m_attempt.parser->got_some());
  drop_connection();
  if (stale) {
    ++m_generation;
    connect_fresh();
    return;
  }
  util::log_debug("key {} attempt failed: {} ({})", m_pool.key(m_attempt.index).label,
                  failure_word(failure, false), detail);
  policy::Outcome outcome;
  outcome.transport = failure;
  act(outcome, verdict_for(outcome), {});
}

} // namespace keyshim::relay

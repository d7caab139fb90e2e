#include "relay/relay.hpp"

#include "relay/exchange.hpp"
#include "relay/header_rules.hpp"
#include "relay/json_error.hpp"
#include "relay/upstream_job.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

using namespace std::chrono;

// A response that completed before the handler looked at it is sent with a
// Content-Length rather than chunked, if it is this small.
constexpr std::size_t k_buffered_answer_limit = 256 * 1024;

milliseconds since(steady_clock::time_point start) {
  return duration_cast<milliseconds>(steady_clock::now() - start);
}

void copy_headers(const httplib::Headers& from, httplib::Response& res) {
  for (const auto& [name, value] : from) {
    res.headers.emplace(name, value);
  }
}

// Counts a request as in flight from construction until the response is done
// (for a stream, that is after the handler has returned).
struct InFlight {
  explicit InFlight(std::atomic<int>& counter) : m_counter(counter) { ++m_counter; }
  ~InFlight() { --m_counter; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  std::atomic<int>& m_counter;
};

} // namespace

Relay::Relay(milliseconds tick) : m_tick(tick) {
}

void Relay::handle(std::shared_ptr<const PoolState> state, const httplib::Request& req,
                   httplib::Response& res, std::function<bool()> client_gone) {
  try {
    forward(std::move(state), req, res, client_gone);
  } catch (const std::exception& e) {
    util::log_error("{} {}: internal error: {}", req.method, req.path, e.what());
    res.status = 500;
    res.set_content(json_error_body(fmt::format("keyshim: internal error: {}", e.what()),
                                    "keyshim_internal_error", "internal_error"),
                    "application/json");
  }
}

void Relay::forward(std::shared_ptr<const PoolState> state, const httplib::Request& req,
                    httplib::Response& res, const std::function<bool()>& client_gone) {
  const auto started = steady_clock::now();
  auto in_flight = std::make_shared<InFlight>(m_in_flight);
  RequestRecord base_record;
  base_record.method = req.method;
  base_record.path = req.path;

  ForwardedRequest forwarded{req.method, req.target, upstream_request_headers(req.headers), req.body};
  // httplib's server would gzip our already-encoded response for a client
  // that accepts gzip, and apply a Range to it. The relay forwards both
  // upstream; downstream they must not act again. The Request object is
  // httplib's own non-const local, handed to us as const.
  auto& downstream = const_cast<httplib::Request&>(req);
  downstream.headers.erase("Accept-Encoding");
  downstream.ranges.clear();

  if (!state->pool) {
    res.status = 503;
    res.set_content(json_error_body(state->problem, "keyshim_not_configured", "pool_file_unusable"),
                    "application/json");
    base_record.status = 503;
    base_record.error = "no usable pool file";
    base_record.duration = since(started);
    log_request(base_record);
    return;
  }

  // httplib enforces max_request_body for declared lengths only; a chunked
  // body is measured here, once read.
  if (req.body.size() > state->config->server.max_request_body) {
    res.status = 413;
    res.set_content(json_error_body(fmt::format("keyshim: request body of {} bytes exceeds max_request_body "
                                                "({} bytes)",
                                                req.body.size(), state->config->server.max_request_body),
                                    "keyshim_refused", "request_too_large"),
                    "application/json");
    base_record.status = 413;
    base_record.duration = since(started);
    log_request(base_record);
    return;
  }

  auto exchange = std::make_shared<Exchange>();
  exchange->update_record([&](RequestRecord& r) { r = base_record; });
  auto job = std::make_shared<UpstreamJob>(state, std::move(forwarded), *exchange, m_clients);
  exchange->start([job] { job->run(); });

  // Before the commit point nothing has been sent, so this thread's only jobs
  // are to notice a client that left (and stop the upstream, which is still
  // spending tokens) and to enforce the first-byte deadline.
  const config::UpstreamSettings& settings = state->config->upstream;
  Phase phase = Phase::waiting;
  while ((phase = exchange->wait_decision(m_tick)) == Phase::waiting) {
    std::string stop_reason;
    if (client_gone()) {
      stop_reason = "client closed the connection before the response started";
    } else if (m_aborting) {
      stop_reason = "keyshim is shutting down";
    } else if (exchange->upstream_done()) {
      stop_reason = "upstream ended without a decision";
    }
    if (!stop_reason.empty()) {
      exchange->cancel_and_join(stop_reason);
      RequestRecord record = exchange->record();
      record.status = 499; // nginx's "client closed request", for the log only
      record.error = stop_reason;
      record.duration = since(started);
      log_request(record);
      res.status = 503;
      return;
    }
    exchange->enforce_attempt_deadlines(settings.first_byte_timeout, settings.idle_timeout);
  }

  // A whole response in hand (an answer, or a body that completed before we
  // looked): sent with a Content-Length.
  auto send_whole = [&](int status, const httplib::Headers& headers, std::string body) {
    exchange->join();
    res.status = status;
    copy_headers(headers, res);
    res.body = std::move(body);
    RequestRecord record = exchange->record();
    record.status = status;
    record.bytes = res.body.size();
    record.duration = since(started);
    log_request(record);
  };

  if (phase == Phase::answered) {
    Answer answer = exchange->take_answer();
    send_whole(answer.status, answer.headers, std::move(answer.body));
    return;
  }

  httplib::Headers headers = exchange->headers();
  if (exchange->complete_before(k_buffered_answer_limit)) {
    // Complete means the upstream pushed its last byte: the pull gets it all.
    send_whole(exchange->status(), headers, exchange->pull(milliseconds(0)).bytes);
    return;
  }
  res.status = exchange->status();

  std::string content_type;
  if (auto it = headers.find("Content-Type"); it != headers.end()) {
    content_type = it->second;
    headers.erase("Content-Type");
  }
  copy_headers(headers, res);
  const milliseconds idle_timeout = settings.idle_timeout;
  const int status = res.status;

  // After the commit point a failure can no longer move to another key: the
  // client has bytes from this one. It ends the response abnormally (the
  // provider returns false, so no final chunk) and the client sees an error.
  auto provider = [this, exchange, idle_timeout, client_gone](std::size_t, httplib::DataSink& sink) {
    Exchange::Pull pulled = exchange->pull(m_tick);
    if (!pulled.bytes.empty()) {
      if (!sink.write(pulled.bytes.data(), pulled.bytes.size())) {
        exchange->cancel("client went away mid-stream");
        return false;
      }
      exchange->note_bytes_sent(pulled.bytes.size());
    }
    if (pulled.ended) {
      if (pulled.clean) {
        sink.done();
        return true;
      }
      exchange->update_record([&](RequestRecord& r) { r.error = pulled.why; });
      return false;
    }
    if (!pulled.bytes.empty()) {
      return true;
    }
    std::string stop_reason;
    if (m_aborting) {
      stop_reason = "keyshim is shutting down";
    } else if (exchange->idle_for_longer_than(idle_timeout)) {
      stop_reason = fmt::format("upstream silent for more than {}", util::format_duration(idle_timeout));
    } else if (client_gone()) {
      stop_reason = "client went away mid-stream";
    }
    if (!stop_reason.empty()) {
      exchange->update_record([&](RequestRecord& r) { r.error = stop_reason; });
      exchange->cancel(stop_reason);
      return false;
    }
    return true;
  };

  auto releaser = [exchange, in_flight, started, status](bool success) {
    exchange->cancel_and_join(success ? "" : "client went away mid-stream");
    RequestRecord record = exchange->record();
    record.status = status;
    record.stream = true;
    record.duration = since(started);
    if (!success && record.error.empty()) {
      record.error = "client went away mid-stream";
    }
    log_request(record);
  };
  res.set_chunked_content_provider(content_type, provider, releaser);
  if (content_type.empty()) {
    res.headers.erase("Content-Type");
  }
}

} // namespace keyshim::relay

#include "relay/capture_draft.hpp"

#include "relay/header_rules.hpp"
#include "relay/redact.hpp"
#include "util/ascii.hpp"
#include "util/byte_text.hpp"

#include <algorithm>
#include <array>

namespace keyshim::relay {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Beyond what the relay treats as a client's key (is_credential): what
// carries a session or a proxy's password.
constexpr std::array<std::string_view, 3> k_also_secret = {"proxy-authorization", "cookie", "set-cookie"};

bool keeps_field(std::string_view name) {
  return !is_credential(name) && std::none_of(k_also_secret.begin(), k_also_secret.end(),
                                              [&](std::string_view s) { return util::iequals(s, name); });
}

bool is_credential_param(std::string_view name, const std::vector<std::string>& query_auth_params) {
  return name == "key" ||
         std::find(query_auth_params.begin(), query_auth_params.end(), name) != query_auth_params.end();
}

} // namespace

CaptureMask::CaptureMask(const Redactor& keys, const util::Secret* client_token)
    : m_keys(keys), m_margin(keys.longest()) {
  if (client_token && !client_token->reveal().empty()) {
    const std::string& token = client_token->reveal();
    m_token.emplace_back(token, client_token->fingerprint());
    std::string encoded = util::percent_encode(token);
    if (encoded != token) {
      m_token.emplace_back(encoded, client_token->fingerprint());
    }
    m_margin = std::max(m_margin, encoded.size());
  }
}

std::string CaptureMask::apply(std::string_view text) const {
  std::string out = m_keys.apply(text);
  for (const auto& [form, fingerprint] : m_token) {
    for (std::size_t at = out.find(form); at != std::string::npos;
         at = out.find(form, at + fingerprint.size())) {
      out.replace(at, form.size(), fingerprint);
    }
  }
  return out;
}

Fields captured_head(const Fields& fields, const CaptureMask& mask) {
  Fields out;
  out.reserve(fields.size() + 1); // and a keyshim-capture field
  std::size_t used = 0;
  std::size_t left_out = 0;
  for (const auto& [name, value] : fields) {
    if (!keeps_field(name)) {
      continue;
    }
    std::size_t cost = name.size() + value.size() + sizeof(Fields::value_type);
    if (used + cost > k_capture_head_limit) {
      ++left_out;
      continue;
    }
    used += cost;
    out.emplace_back(name, mask.apply(value));
  }
  if (left_out > 0) {
    out.emplace_back("keyshim-capture", std::to_string(left_out) + " more fields not kept");
  }
  return out;
}

std::string captured_target(std::string_view target, const std::vector<std::string>& query_auth_params,
                            const CaptureMask& mask) {
  std::size_t question = target.find('?');
  if (question == std::string_view::npos) {
    return mask.apply(target);
  }
  std::string out(target.substr(0, question + 1));
  std::string_view query = target.substr(question + 1);
  while (true) {
    std::size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    std::size_t equals = param.find('=');
    if (equals != std::string_view::npos &&
        is_credential_param(util::percent_decode(param.substr(0, equals)), query_auth_params)) {
      out.append(param.substr(0, equals + 1)).append("~");
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    out += '&';
    query.remove_prefix(amp + 1);
  }
  return mask.apply(out);
}

// The bytes past `limit`, up to the mask's margin, are read so that a key the
// cut would split is replaced whole before the cut.
CapturedBody captured_body(std::string_view bytes, std::uint64_t total, std::size_t limit,
                           const CaptureMask& mask) {
  CapturedBody body;
  body.size = total;
  std::string_view start = bytes.substr(0, limit + mask.margin());
  std::string masked = mask.apply(start);
  body.truncated = total > start.size() || masked.size() > limit;
  if (masked.size() > limit) {
    masked.resize(util::utf8_prefix(masked, limit));
  }
  masked.shrink_to_fit();
  body.data = std::move(masked);
  return body;
}

bool capture_wanted(config::CaptureMode mode, const RequestRecord& record, bool attempt_failed) {
  switch (mode) {
  case config::CaptureMode::off:
    return false;
  case config::CaptureMode::all:
    return true;
  case config::CaptureMode::errors:
    break;
  }
  // A client that hangs up mid-answer (Esc in a coding tool) chose to: the
  // answer did not fail, and keeping every such stop would push the real
  // failures out of the ring. One that left before any answer is kept.
  bool cut = !record.error.empty() && !record.client_left;
  return record.status >= 400 || record.status == 0 || cut || attempt_failed;
}

CaptureDraft::CaptureDraft(config::CaptureMode mode, std::string target, util::TimePoint time,
                           std::size_t read_limit)
    : m_mode(mode), m_target(std::move(target)), m_time(time), m_read_limit(read_limit) {
}

void CaptureDraft::step(std::string key, int status, std::string verdict, std::string reason, Mono now) {
  if (verdict != "ok") {
    m_failed = true;
  }
  std::int64_t ms = duration_cast<milliseconds>(now - m_attempt_started).count();
  m_chain.push_back({std::move(key), status, std::move(verdict), std::move(reason), ms});
}

void CaptureDraft::response_head(Fields head, bool events) {
  m_response_head = std::move(head);
  m_events = events;
}

void CaptureDraft::tee(std::string_view piece) {
  if (m_response.size() < m_read_limit) {
    m_response.append(piece.substr(0, m_read_limit - m_response.size()));
  }
}

void CaptureDraft::answer(Fields head, std::string_view body) {
  m_response_head = std::move(head);
  m_events = false;
  m_response.assign(body.substr(0, m_read_limit));
}

bool CaptureDraft::wanted(const RequestRecord& record) const {
  return capture_wanted(m_mode, record, m_failed);
}

Capture CaptureDraft::build(const RequestRecord& record, const Request& request, const CaptureMask& mask,
                            std::size_t body_limit) const {
  Capture c;
  c.time = m_time;
  c.pool = record.pool;
  c.model = mask.apply(record.model);
  c.method = record.method;
  static const std::vector<std::string> k_none;
  c.target = captured_target(m_target, request.query_auth_params ? *request.query_auth_params : k_none, mask);
  c.status = record.status;
  c.duration_ms = record.duration.count();
  if (record.ttfb) {
    c.ttfb_ms = record.ttfb->count();
  }
  c.stream = record.stream;
  c.chain = m_chain;
  c.input_tokens = record.input_tokens;
  c.output_tokens = record.output_tokens;
  c.error = mask.apply(record.error);
  c.replay_of = record.replay_of;
  c.request_head = captured_head(request.head, mask);
  c.request_body = captured_body(request.body, request.body.size(), body_limit, mask);
  c.response_head = captured_head(m_response_head, mask);
  c.response_body = captured_body(m_response, record.bytes, body_limit, mask);
  c.events = m_events;
  return c;
}

} // namespace keyshim::relay

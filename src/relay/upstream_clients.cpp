#include "relay/upstream_clients.hpp"

#include "util/log.hpp"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <fmt/format.h>

namespace keyshim::relay {
namespace {

std::string scheme_host_port(const config::UpstreamUrl& url) {
  bool v6 = url.host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", url.scheme, v6 ? "[" : "", url.host, v6 ? "]" : "", url.port);
}

template <typename Duration> std::pair<time_t, time_t> sec_usec(Duration d) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return {static_cast<time_t>(us / 1'000'000), static_cast<time_t>(us % 1'000'000)};
}

// The trust store and name check for one upstream host. httplib verifies
// the chain, but its own host check accepts a matching Common Name even when
// the certificate has subjectAltNames (RFC 6125 forbids that), so OpenSSL
// checks the name here, strictly. set_ca_cert_path would replace the system
// store; ca_file adds to it.
X509_STORE* verification_store(const std::string& host, const std::optional<std::string>& ca_file) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_set_default_paths(store);
  if (ca_file && X509_STORE_load_locations(store, ca_file->c_str(), nullptr) != 1) {
    util::log_warn("ca_file \"{}\" could not be loaded; TLS upstreams it was meant for will fail", *ca_file);
  }
  X509_VERIFY_PARAM* param = X509_STORE_get0_param(store);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) { // not an IP address: a DNS name
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT |
                                               X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  ERR_clear_error();
  return store;
}

std::shared_ptr<httplib::Client> make_client(const config::UpstreamUrl& url,
                                             const std::optional<std::string>& ca_file,
                                             const UpstreamTimeouts& timeouts) {
  auto client = std::make_shared<httplib::Client>(scheme_host_port(url));
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  // Relayed bytes must reach the client as the upstream sent them: no
  // decompression (it would keep Content-Encoding on a decoded body) and no
  // re-encoding of the client's path.
  client->set_decompress(false);
  client->set_url_encode(false);
  client->set_follow_location(false);
  auto [cs, cu] = sec_usec(timeouts.connect);
  client->set_connection_timeout(cs, cu);
  auto [rs, ru] = sec_usec(timeouts.read);
  client->set_read_timeout(rs, ru);
  auto [ws, wu] = sec_usec(timeouts.write);
  client->set_write_timeout(ws, wu);
  if (url.tls()) {
    client->set_ca_cert_store(verification_store(url.host, ca_file)); // takes ownership
  }
  return client;
}

} // namespace

UpstreamClients::UpstreamClients(std::size_t max_idle_per_origin, std::chrono::milliseconds max_idle_age)
    : m_max_idle_per_origin(max_idle_per_origin), m_max_idle_age(max_idle_age) {
}

std::string UpstreamClients::origin_key(const config::UpstreamUrl& url,
                                        const std::optional<std::string>& ca_file) {
  return scheme_host_port(url) + "|" + ca_file.value_or("");
}

std::shared_ptr<httplib::Client> UpstreamClients::acquire(const config::UpstreamUrl& url,
                                                          const std::optional<std::string>& ca_file,
                                                          const UpstreamTimeouts& timeouts) {
  {
    std::lock_guard lock(m_mutex);
    auto it = m_idle.find(origin_key(url, ca_file));
    auto now = std::chrono::steady_clock::now();
    while (it != m_idle.end() && !it->second.empty()) {
      Idle idle = std::move(it->second.back());
      it->second.pop_back();
      // Providers close idle connections after a while; an old one would
      // likely fail on first use and cost a retry.
      if (now - idle.since < m_max_idle_age) {
        auto [rs, ru] = sec_usec(timeouts.read);
        idle.client->set_read_timeout(rs, ru);
        return idle.client;
      }
    }
  }
  return make_client(url, ca_file, timeouts);
}

void UpstreamClients::release(const config::UpstreamUrl& url, const std::optional<std::string>& ca_file,
                              std::shared_ptr<httplib::Client> client) {
  std::lock_guard lock(m_mutex);
  std::vector<Idle>& idle = m_idle[origin_key(url, ca_file)];
  if (idle.size() < m_max_idle_per_origin) {
    idle.push_back({std::move(client), std::chrono::steady_clock::now()});
  }
}

std::size_t UpstreamClients::idle_count() const {
  std::lock_guard lock(m_mutex);
  std::size_t n = 0;
  for (const auto& [origin, idle] : m_idle) {
    n += idle.size();
  }
  return n;
}

} // namespace keyshim::relay

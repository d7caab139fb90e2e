#include "relay/tls_contexts.hpp"

#include "relay/beast.hpp"
#include "relay/system_trust.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fmt/format.h>

namespace keyshim::relay {

std::shared_ptr<const TlsContexts> TlsContexts::build(const config::Config& config) {
  auto contexts = std::make_shared<TlsContexts>();
  for (const config::PoolConfig& pool : config.pools) {
    for (const config::KeyConfig& key : pool.keys) {
      std::string name = key.ca_file.value_or("");
      if (key.base_url.tls() && contexts->m_entries.count(name) == 0) {
        contexts->m_entries.emplace(std::move(name), make(key.ca_file));
      }
    }
  }
  if (!contexts->m_entries.empty()) {
    preload_system_bundle();
  }
  return contexts;
}

const TlsContexts::Entry* TlsContexts::find(const std::optional<std::string>& ca_file) const {
  auto it = m_entries.find(ca_file.value_or(""));
  return it == m_entries.end() ? nullptr : &it->second;
}

TlsContexts::Entry TlsContexts::make(const std::optional<std::string>& ca_file) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ErrorCode ec;
  if (!add_system_trust(SSL_CTX_get_cert_store(ctx->native_handle()))) {
    ec = ErrorCode(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
  }
  if (ca_file && !ec) {
    ctx->load_verify_file(*ca_file, ec);
  }
  if (ec) {
    std::string error = ca_file ? fmt::format("cannot load ca_file \"{}\": {}", *ca_file, ec.message())
                                : fmt::format("cannot load the system CA store: {}", ec.message());
    ERR_clear_error();
    return Entry{nullptr, std::move(error)};
  }
  ctx->set_verify_mode(ssl::verify_peer);
  return Entry{std::move(ctx), {}};
}

} // namespace keyshim::relay

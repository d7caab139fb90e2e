#pragma once
// The TLS client contexts a pool file needs, one per distinct ca_file (and
// one for the system store alone), built whole before the state that holds
// them is published: at load, before the listening socket is served, and on
// the reloader's thread at a reload, never on the event loop or in a
// request's time. A context costs about 0.1 ms (OpenSSL's context and the
// ca_file; the process's first about 2 ms more, OpenSSL fetching its
// algorithms); the system bundle is indexed by subject once per process, in
// about 1 ms (relay/system_trust.hpp). Immutable once built; safe to read
// from any thread.
#include "config/config.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

// Declared, not included: the pool state holds these contexts and much of
// keyshim (the server's header, the tests) sees the state without compiling
// Asio and OpenSSL's headers. relay/beast.hpp has the definition.
namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace keyshim::relay {

namespace ssl = boost::asio::ssl;

class TlsContexts {
public:
  // A context, or why it could not be made (key-free, for the attempt's error).
  struct Entry {
    std::shared_ptr<ssl::context> context; // null when `error` says why
    std::string error;
  };

  // One entry per distinct ca_file of the https keys of `config` (none when
  // no key is https).
  static std::shared_ptr<const TlsContexts> build(const config::Config& config);

  // The entry for `ca_file`, or null when the file's keys did not need one.
  const Entry* find(const std::optional<std::string>& ca_file) const;
  std::size_t size() const { return m_entries.size(); }

  // Make one: the system store with `ca_file` added to it (not replacing it),
  // TLS 1.2 at least, peers verified.
  static Entry make(const std::optional<std::string>& ca_file);

private:
  std::map<std::string, Entry> m_entries; // by ca_file, "" for none
};

} // namespace keyshim::relay

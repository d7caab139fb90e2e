#include "relay/system_trust.hpp"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::relay {
namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* value = secure_getenv(name);
  return value ? value : fallback;
}

// One certificate of the bundle: its encoding and its subject. Decoding a
// certificate whole is what costs (all ~140 of the bundle take ~20 ms with
// OpenSSL 3, mostly their public keys; their subjects alone ~1 ms), so it
// is decoded only when a handshake asks for its subject.
struct BundleEntry {
  std::string der;
  bool trusted = false;         // "TRUSTED CERTIFICATE": OpenSSL's trust settings follow the certificate
  X509_NAME* subject = nullptr; // never freed, like the entry
  X509* cert = nullptr;         // once a lookup asked for it
};

// The subject Name of a certificate's DER encoding, decoded alone: the
// TBSCertificate's field after [0] version (optional), serial, signature,
// issuer and validity. Null when the encoding is not a certificate's.
X509_NAME* subject_of(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  const unsigned char* end = p + der.size();
  long len = 0;
  int tag = 0;
  int cls = 0;
  auto header = [&] { // one header, p past it; false on an error or an indefinite length
    int ret = ASN1_get_object(&p, &len, &tag, &cls, end - p);
    return (ret & 0x80) == 0 && ret != 0x21;
  };
  for (int depth = 0; depth < 2; ++depth) { // into Certificate, then into TBSCertificate
    if (!header()) {
      return nullptr;
    }
  }
  end = p + len;
  for (int skip = 4, field = 0; skip > 0; ++field) {
    if (!header()) {
      return nullptr;
    }
    p += len;
    if (field > 0 || cls != V_ASN1_CONTEXT_SPECIFIC || tag != 0) {
      --skip;
    }
  }
  return d2i_X509_NAME(nullptr, &p, end - p);
}

// The bundle's certificates by subject, indexed once. Never destroyed:
// handshakes may ask for it until the process exits, and its certificates
// stay referenced by every store they were added to.
class SystemBundle {
public:
  static SystemBundle& instance() {
    static auto* bundle = new SystemBundle();
    return *bundle;
  }

  // Index the bundle now, on the caller's thread (start, before the socket
  // is served; a reload, on the reloader's), unless it is indexed already.
  // Not a thread of its own: one racing OpenSSL's exit handler, and file
  // descriptors opened beside the tests' own, cost more than the ~1 ms.
  void preload() {
    {
      std::lock_guard lock(m_mutex);
      if (m_state != State::idle) {
        return;
      }
      m_state = State::loading;
    }
    load();
  }

  // The certificates with subject `name`, decoded now when first asked for;
  // the bundle is indexed now on this thread if no one has started (or the
  // environment names another file since), else once that is done.
  std::vector<X509*> with_subject(const X509_NAME* name) {
    std::unique_lock lock(m_mutex);
    if (m_state == State::loaded && m_path != bundle_path()) {
      m_state = State::idle;
    }
    if (m_state == State::idle) {
      m_state = State::loading;
      lock.unlock();
      load();
      lock.lock();
    }
    m_loaded.wait(lock, [this] { return m_state == State::loaded; });
    std::vector<X509*> found;
    for (BundleEntry& entry : m_entries) {
      if (X509_NAME_cmp(entry.subject, name) == 0 && decode(entry)) {
        found.push_back(entry.cert);
      }
    }
    return found;
  }

private:
  enum class State { idle, loading, loaded };
  static std::string bundle_path() {
    return env_or(X509_get_default_cert_file_env(), X509_get_default_cert_file());
  }

  // Every certificate block of the file (PEM_X509_INFO_read_bio's kinds),
  // base64-decoded and its subject read; none when the file is missing.
  static std::vector<BundleEntry> read(const std::string& path) {
    std::vector<BundleEntry> entries;
    BIO* in = BIO_new_file(path.c_str(), "r");
    char* type = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long len = 0;
    while (in && PEM_read_bio(in, &type, &header, &data, &len) == 1) {
      std::string_view kind(type);
      if (kind == PEM_STRING_X509 || kind == PEM_STRING_X509_OLD || kind == PEM_STRING_X509_TRUSTED) {
        BundleEntry entry{std::string(reinterpret_cast<const char*>(data), static_cast<std::size_t>(len)),
                          kind == PEM_STRING_X509_TRUSTED};
        entry.subject = subject_of(entry.der);
        if (entry.subject) {
          entries.push_back(std::move(entry));
        }
      }
      OPENSSL_free(type);
      OPENSSL_free(header);
      OPENSSL_free(data);
    }
    BIO_free(in);
    return entries;
  }

  static bool decode(BundleEntry& entry) {
    if (!entry.cert) {
      const auto* p = reinterpret_cast<const unsigned char*>(entry.der.data());
      auto n = static_cast<long>(entry.der.size());
      entry.cert = entry.trusted ? d2i_X509_AUX(nullptr, &p, n) : d2i_X509(nullptr, &p, n);
    }
    return entry.cert != nullptr;
  }

  void load() {
    std::string path = bundle_path();
    std::vector<BundleEntry> entries = read(path);
    ERR_clear_error(); // a missing bundle is no error: the directory may hold everything
    std::lock_guard lock(m_mutex);
    for (BundleEntry& entry : m_entries) {
      m_retired.push_back(std::move(entry));
    }
    m_entries = std::move(entries);
    m_path = std::move(path);
    m_state = State::loaded;
    m_loaded.notify_all();
  }

  std::mutex m_mutex;
  std::condition_variable m_loaded;
  State m_state = State::idle;
  std::vector<BundleEntry> m_entries;
  std::vector<BundleEntry> m_retired; // an earlier file's (tests change the environment): never freed
  std::string m_path;
};

// The lookup's answer, as OpenSSL's own lookups give it: every certificate
// with that subject added to the store, `ret` borrowing one of them (the
// caller takes its own reference).
int bundle_by_subject(X509_LOOKUP* lookup, X509_LOOKUP_TYPE type, const X509_NAME* name, X509_OBJECT* ret) {
  if (type != X509_LU_X509) {
    return 0;
  }
  X509_STORE* store = X509_LOOKUP_get_store(lookup);
  X509* found = nullptr;
  for (X509* cert : SystemBundle::instance().with_subject(name)) {
    if (X509_NAME_cmp(X509_get_subject_name(cert), name) == 0) { // the whole decoding agrees with the index
      X509_STORE_add_cert(store, cert);                          // a duplicate is refused, harmlessly
      found = found ? found : cert;
    }
  }
  ERR_clear_error();
  if (!found || X509_OBJECT_set1_X509(ret, found) != 1) {
    return 0;
  }
  X509_free(found); // borrowed, like the store's own lookups
  return 1;
}

X509_LOOKUP_METHOD* bundle_method() {
  static X509_LOOKUP_METHOD* method = [] {
    X509_LOOKUP_METHOD* m = X509_LOOKUP_meth_new("keyshim system bundle");
    if (m) {
      X509_LOOKUP_meth_set_get_by_subject(m, bundle_by_subject);
    }
    return m;
  }();
  return method;
}

} // namespace

bool add_system_trust(X509_STORE* store) {
  X509_LOOKUP* dir = X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir());
  X509_LOOKUP* bundle = bundle_method() ? X509_STORE_add_lookup(store, bundle_method()) : nullptr;
  if (!dir || !bundle) {
    return false;
  }
  X509_LOOKUP_add_dir(dir, nullptr, X509_FILETYPE_DEFAULT); // SSL_CERT_DIR or the default
  if (secure_getenv("SSL_CERT_URI")) {
    X509_LOOKUP* uri = X509_STORE_add_lookup(store, X509_LOOKUP_store());
    if (!uri || X509_LOOKUP_add_store(uri, nullptr) != 1) {
      return false;
    }
  }
  ERR_clear_error();
  return true;
}

void preload_system_bundle() {
  SystemBundle::instance().preload();
}

} // namespace keyshim::relay

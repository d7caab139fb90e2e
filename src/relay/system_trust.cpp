#include "relay/system_trust.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace keyshim::relay {
namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* value = secure_getenv(name);
  return value ? value : fallback;
}

// The bundle's certificates, read once. Never destroyed: handshakes may ask
// for it until the process exits, and its certificates stay referenced by
// every store they were added to.
class SystemBundle {
public:
  static SystemBundle& instance() {
    static auto* bundle = new SystemBundle();
    return *bundle;
  }

  // Read the bundle now, on the caller's thread (start, before the socket
  // is served; a reload, on the reloader's), unless it is read already.
  // Not a thread of its own: one racing OpenSSL's exit handler, and file
  // descriptors opened beside the tests' own, cost more than the ~17 ms.
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

  // The certificates, read now on this thread if no one has started (or the
  // environment names another file since), else once the background read
  // is done.
  std::vector<X509*> certificates() {
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
    return m_certs;
  }

private:
  enum class State { idle, loading, loaded };
  static std::string bundle_path() {
    return env_or(X509_get_default_cert_file_env(), X509_get_default_cert_file());
  }

  void load() {
    std::vector<X509*> certs;
    std::string path = bundle_path();
    if (BIO* in = BIO_new_file(path.c_str(), "r")) {
      STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(in, nullptr, nullptr, nullptr);
      for (int i = 0; infos && i < sk_X509_INFO_num(infos); ++i) {
        X509_INFO* info = sk_X509_INFO_value(infos, i);
        if (info->x509 && X509_up_ref(info->x509) == 1) {
          certs.push_back(info->x509);
        }
      }
      sk_X509_INFO_pop_free(infos, X509_INFO_free);
      BIO_free(in);
    }
    ERR_clear_error(); // a missing bundle is no error: the directory may hold everything
    std::lock_guard lock(m_mutex);
    m_retired.insert(m_retired.end(), m_certs.begin(), m_certs.end());
    m_certs = std::move(certs);
    m_path = std::move(path);
    m_state = State::loaded;
    m_loaded.notify_all();
  }

  std::mutex m_mutex;
  std::condition_variable m_loaded;
  State m_state = State::idle;
  std::vector<X509*> m_certs;
  std::vector<X509*> m_retired; // an earlier file's (tests change the environment): never freed
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
  for (X509* cert : SystemBundle::instance().certificates()) {
    if (X509_NAME_cmp(X509_get_subject_name(cert), name) == 0) {
      X509_STORE_add_cert(store, cert); // a duplicate is refused, harmlessly
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

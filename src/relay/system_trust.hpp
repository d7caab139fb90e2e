#pragma once
// The system trust store's bundle file (SSL_CERT_FILE, else OpenSSL's default,
// /etc/ssl/certs/ca-certificates.crt on Debian), read once per process and
// handed to TLS contexts by subject, as OpenSSL asks for an issuer. Internal
// to relay/.
//
// Why not SSL_CTX_set_default_verify_paths: it parses the whole bundle (about
// 140 certificates, 17 ms with OpenSSL 3) into every context it builds, and a
// start that builds its contexts before serving would pay that before the
// first answer. Here a context is usable at once (ca_file and the hashed
// certificate directory, which opens one file per issuer asked for), and the
// bundle is indexed once by subject, when the pool file is loaded (before
// the socket is served at start; on the reloader's thread at a reload),
// never on the event loop: about 1 ms, its base64 and the subjects alone. A
// certificate is decoded whole (its public key is most of those 17 ms) only
// when a handshake asks for its subject, once. The trust set is the same as
// with the default paths.
#include <openssl/ossl_typ.h>

namespace keyshim::relay {

// Add the system store to `store`: the hashed directory (SSL_CERT_DIR, else
// OpenSSL's default), then the bundle by subject, then SSL_CERT_URI when set.
// False when OpenSSL refuses a lookup.
bool add_system_trust(X509_STORE* store);

// Index the bundle on this thread, once per process (again when SSL_CERT_FILE
// names another file).
void preload_system_bundle();

} // namespace keyshim::relay

#pragma once
// TLS for the benchmark's epoll programs (mock upstream and load driver):
// non-blocking OpenSSL on a plain socket, behind recv/send-shaped calls so
// that their loops stay the same with and without TLS.
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <sys/types.h>

// Options both sides share: TLS 1.2+, EOF without close_notify is a plain
// EOF (a benchmark peer may just close), and partial writes, so that a full
// socket takes what it can and the rest waits for EPOLLOUT like plain send.
inline void bench_tls_common(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

// A server context from PEM files; nullptr (and a message) when they fail.
inline SSL_CTX* bench_tls_server(const char* cert, const char* key) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
    fprintf(stderr, "bench: cannot load TLS certificate %s / key %s\n", cert, key);
    ERR_print_errors_fp(stderr);
    SSL_CTX_free(ctx);
    return nullptr;
  }
  bench_tls_common(ctx);
  return ctx;
}

// A client context that trusts only `ca` and checks the name "localhost"
// (set per connection, see bench_tls_client_conn), as the proxies do.
inline SSL_CTX* bench_tls_client(const char* ca) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr || SSL_CTX_load_verify_locations(ctx, ca, nullptr) != 1) {
    fprintf(stderr, "bench: cannot load CA file %s\n", ca);
    ERR_print_errors_fp(stderr);
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  bench_tls_common(ctx);
  return ctx;
}

// A client connection on connected socket `fd`: SNI and name check
// "localhost"; the handshake runs in bench_tls_handshake.
inline SSL* bench_tls_client_conn(SSL_CTX* ctx, int fd) {
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  SSL_set1_host(ssl, "localhost");
  SSL_set_connect_state(ssl);
  return ssl;
}

// One step of a client handshake: 1 done, 0 waiting (*want_write says for
// which direction), -1 failed.
inline int bench_tls_handshake(SSL* ssl, bool* want_write) {
  ERR_clear_error();
  int r = SSL_do_handshake(ssl);
  if (r == 1) {
    return 1;
  }
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    *want_write = e == SSL_ERROR_WANT_WRITE;
    return 0;
  }
  ERR_print_errors_fp(stderr);
  return -1;
}

// Maps an OpenSSL result to the recv/send convention: -1 with errno EAGAIN
// while the record layer waits for the socket, 0 at EOF.
inline ssize_t bench_tls_result(SSL* ssl, int r) {
  if (r > 0) {
    return r;
  }
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_ZERO_RETURN) {
    return 0;
  }
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
  } else if (e != SSL_ERROR_SYSCALL || errno == 0 || errno == EAGAIN) {
    errno = ECONNRESET;
  }
  ERR_clear_error();
  return -1;
}

// SSL_read and SSL_write with recv/send results. On a server connection in
// accept state the first calls run the handshake.
inline ssize_t bench_tls_recv(SSL* ssl, char* buf, size_t n) {
  ERR_clear_error();
  return bench_tls_result(ssl, SSL_read(ssl, buf, static_cast<int>(n > INT_MAX ? INT_MAX : n)));
}

inline ssize_t bench_tls_send(SSL* ssl, const char* p, size_t n) {
  ERR_clear_error();
  return bench_tls_result(ssl, SSL_write(ssl, p, static_cast<int>(n > INT_MAX ? INT_MAX : n)));
}

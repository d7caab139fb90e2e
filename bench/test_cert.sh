# shellcheck shell=bash
# Sourced by bench/mock_pool.sh and bench/sidebyside.sh: the HTTPS mock's
# certificate, self-signed and made for one run, for "localhost" and
# 127.0.0.1. keyshim's pool (ca_file), nginx (proxy_ssl_trusted_certificate)
# and the load driver (--tls-ca) trust it, and nothing else does.
#
#   make_test_cert DIR   # writes DIR/cert.pem and DIR/key.pem; when openssl
#                        # fails, says why on stderr and returns 1
make_test_cert() {
  local dir=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>"$dir/openssl.err" && return 0
  echo "openssl could not make the test certificate: $(cat "$dir/openssl.err")" >&2
  return 1
}

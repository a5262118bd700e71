// The TLS record path before the handshake completes: the bytes a client
// sends to the server side of an OpenSSL connection made from our context
// (web/tls.h makeTlsContext, the certificate and key given inline), fed
// through memory BIOs in the pieces the input asks for, as the front thread
// feeds its non-blocking sockets. Two contexts: the default one, and one
// with TLS 1.2, RequireAnyClientCert and client_allowed_sans, whose client
// Certificate message is plaintext in TLS 1.2 and so reaches the SAN check
// (web/tls.cpp) with fuzzed certificates.
//
// Input: byte 0 picks the context (bit 0) and the piece size (the rest,
// 1..128 bytes); the remaining bytes are the client's records.
// Invariants: the handshake never completes (the input cannot hold a
// client Finished made with the server's fresh random), OpenSSL returns
// WANT_READ or an error, never a crash or a sanitizer report.
// Seeds: tests/fuzz/seeds/tls_handshake.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

#include "tests/support/fuzz_support.h"
#include "web/tls.h"

using namespace memcg;

namespace {

TlsContext contexts[2];

std::string pem(int (*write)(BIO*, void*), void* obj) {
  BIO* b = BIO_new(BIO_s_mem());
  write(b, obj);
  char* p = nullptr;
  long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

int writeCert(BIO* b, void* x) { return PEM_write_bio_X509(b, static_cast<X509*>(x)); }
int writeKey(BIO* b, void* k) {
  return PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0, nullptr,
                                  nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  FUZZ_CHECK(key && x);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("fuzz"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  FUZZ_CHECK(X509_sign(x, key, EVP_sha256()) > 0);
  TlsServerConfig c;
  c.cert = pem(writeCert, x);
  c.key = pem(writeKey, key);
  X509_free(x);
  EVP_PKEY_free(key);
  auto plain = makeTlsContext(c);
  FUZZ_CHECK(plain.ok());
  contexts[0] = *plain;
  c.maxVersion = "TLS12";
  c.clientAuthType = "RequireAnyClientCert";
  c.clientAllowedSans = {"client.example", "10.0.0.1"};
  auto sans = makeTlsContext(c);
  FUZZ_CHECK(sans.ok());
  contexts[1] = *sans;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const SSL_CTX* ctxConst = contexts[data[0] & 1].get();
  const size_t piece = 1 + (data[0] >> 1);
  ++data;
  --size;
  SSL* ssl = SSL_new(const_cast<SSL_CTX*>(ctxConst));
  FUZZ_CHECK(ssl);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in, -1);  // empty = "try again", as a non-blocking socket
  SSL_set_bio(ssl, in, out);         // ssl owns both
  SSL_set_accept_state(ssl);
  size_t off = 0;
  for (;;) {
    int r = SSL_do_handshake(ssl);
    FUZZ_CHECK(r != 1);
    int e = SSL_get_error(ssl, r);
    (void)BIO_reset(out);  // what the server would send: dropped
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) break;
    if (off >= size) break;  // a stalled client: the handshake timeout's case
    size_t n = std::min(piece, size - off);
    FUZZ_CHECK(BIO_write(in, data + off, static_cast<int>(n)) == static_cast<int>(n));
    off += n;
  }
  SSL_free(ssl);
  ERR_clear_error();
  return 0;
}

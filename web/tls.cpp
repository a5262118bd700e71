#include "web/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <array>
#include <string_view>
#include <utility>

namespace memcg {
namespace {

Error bad(const std::string& why) { return makeError(EINVAL, "", why); }

/// The first error on OpenSSL's (per-thread) queue, as text; the queue is
/// cleared.
std::string sslError() {
  unsigned long e = ERR_get_error();
  std::string out;
  if (e != 0) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    out = buf.data();
  }
  ERR_clear_error();
  return out.empty() ? std::string("unknown OpenSSL error") : out;
}

int tlsVersion(std::string_view name) {
  if (name == "TLS10") return TLS1_VERSION;
  if (name == "TLS11") return TLS1_1_VERSION;
  if (name == "TLS12") return TLS1_2_VERSION;
  if (name == "TLS13") return TLS1_3_VERSION;
  return 0;
}

/// Go's curve names -> OpenSSL's group names.
const char* groupName(std::string_view go) {
  if (go == "CurveP256") return "P-256";
  if (go == "CurveP384") return "P-384";
  if (go == "CurveP521") return "P-521";
  if (go == "X25519") return "X25519";
  return nullptr;
}

constexpr std::array<std::string_view, 5> kClientAuthTypes = {
    "NoClientCert", "RequestClientCert", "RequireAnyClientCert",
    "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};

/// Accepts any certificate the client sends (Request/RequireAny: asked for,
/// not verified, as Go does).
int acceptAny(int, X509_STORE_CTX*) { return 1; }

}  // namespace

std::vector<std::string> TlsServerConfig::files() const {
  std::vector<std::string> f{certFile, keyFile};
  if (!clientCaFile.empty()) f.push_back(clientCaFile);
  return f;
}

Status validateTlsConfig(const TlsServerConfig& c) {
  if (c.certFile.empty()) return bad("tls_server_config.cert_file is required");
  if (c.keyFile.empty()) return bad("tls_server_config.key_file is required");
  bool known = false;
  for (auto t : kClientAuthTypes) known |= t == c.clientAuthType;
  if (!known) {
    return bad("tls_server_config.client_auth_type: unknown " + c.clientAuthType +
               " (NoClientCert, RequestClientCert, RequireAnyClientCert, "
               "VerifyClientCertIfGiven, RequireAndVerifyClientCert)");
  }
  bool verifies = c.clientAuthType == "VerifyClientCertIfGiven" ||
                  c.clientAuthType == "RequireAndVerifyClientCert";
  if (verifies && c.clientCaFile.empty())
    return bad("tls_server_config.client_ca_file is required by client_auth_type " +
               c.clientAuthType);
  if (!verifies && !c.clientCaFile.empty() && c.clientAuthType == "NoClientCert")
    return bad(
        "tls_server_config.client_ca_file is set but client_auth_type is NoClientCert");
  int lo = tlsVersion(c.minVersion), hi = tlsVersion(c.maxVersion);
  if (lo == 0)
    return bad("tls_server_config.min_version: unknown " + c.minVersion +
               " (TLS10..TLS13)");
  if (hi == 0)
    return bad("tls_server_config.max_version: unknown " + c.maxVersion +
               " (TLS10..TLS13)");
  if (lo > hi) return bad("tls_server_config: min_version is above max_version");
  for (const auto& s : c.cipherSuites) {
    if (std::string_view(OPENSSL_cipher_name(s.c_str())) == "(NONE)")
      return bad("tls_server_config.cipher_suites: unknown " + s +
                 " (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)");
  }
  for (const auto& g : c.curvePreferences) {
    if (!groupName(g))
      return bad("tls_server_config.curve_preferences: unknown " + g +
                 " (CurveP256, CurveP384, CurveP521, X25519)");
  }
  return Ok{};
}

Result<TlsContext> makeTlsContext(const TlsServerConfig& c) {
  if (auto v = validateTlsConfig(c); !v) return v.error();
  ERR_clear_error();
  TlsContext ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return bad("cannot make a TLS context: " + sslError());
  SSL_CTX* x = ctx.get();
  SSL_CTX_set_min_proto_version(x, tlsVersion(c.minVersion));
  SSL_CTX_set_max_proto_version(x, tlsVersion(c.maxVersion));
  // Renegotiation would let a client make the front thread do handshakes on
  // an established connection; TLS 1.3 has none.
  // A client that closes without close_notify reads as EOF, not an error.
  uint64_t options =
      SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF;
  if (c.preferServerCipherSuites) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(x, options);
  // Writes are retried from the same (pooled, possibly moved) buffer; an
  // idle connection gives its 16 KiB read and write buffers back (slowloris
  // over TLS then costs ~10 KiB a connection rather than ~30).
  SSL_CTX_set_mode(x, SSL_MODE_ENABLE_PARTIAL_WRITE |
                          SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(x, SSL_SESS_CACHE_SERVER);
  if (SSL_CTX_use_certificate_chain_file(x, c.certFile.c_str()) != 1)
    return makeError(EINVAL, c.certFile, "tls_server_config.cert_file: " + sslError());
  if (SSL_CTX_use_PrivateKey_file(x, c.keyFile.c_str(), SSL_FILETYPE_PEM) != 1)
    return makeError(EINVAL, c.keyFile, "tls_server_config.key_file: " + sslError());
  if (SSL_CTX_check_private_key(x) != 1)
    return makeError(
        EINVAL, c.keyFile,
        "tls_server_config: key_file does not match cert_file: " + sslError());
  if (!c.cipherSuites.empty()) {
    std::string list;
    for (const auto& s : c.cipherSuites) {
      if (!list.empty()) list += ':';
      list += OPENSSL_cipher_name(s.c_str());
    }
    if (SSL_CTX_set_cipher_list(x, list.c_str()) != 1)
      return bad("tls_server_config.cipher_suites: " + sslError());
  }
  if (!c.curvePreferences.empty()) {
    std::string list;
    for (const auto& g : c.curvePreferences) {
      if (!list.empty()) list += ':';
      list += groupName(g);
    }
    if (SSL_CTX_set1_groups_list(x, list.c_str()) != 1)
      return bad("tls_server_config.curve_preferences: " + sslError());
  }
  if (!c.clientCaFile.empty()) {
    if (SSL_CTX_load_verify_locations(x, c.clientCaFile.c_str(), nullptr) != 1)
      return makeError(EINVAL, c.clientCaFile,
                       "tls_server_config.client_ca_file: " + sslError());
    // The CA names sent in the certificate request, so a client picks the
    // right certificate.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.clientCaFile.c_str());
    if (!names)
      return makeError(EINVAL, c.clientCaFile,
                       "tls_server_config.client_ca_file: " + sslError());
    SSL_CTX_set_client_CA_list(x, names);
  }
  const std::string& t = c.clientAuthType;
  if (t == "RequestClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER, acceptAny);
  } else if (t == "RequireAnyClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, acceptAny);
  } else if (t == "VerifyClientCertIfGiven") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER, nullptr);
  } else if (t == "RequireAndVerifyClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else {
    SSL_CTX_set_verify(x, SSL_VERIFY_NONE, nullptr);
  }
  // Session resumption needs a context id when clients are verified.
  static constexpr unsigned char kSid[] = "memcg_exporter";
  SSL_CTX_set_session_id_context(x, kSid, sizeof kSid - 1);
  return ctx;
}

}  // namespace memcg

#include "web/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <memory>
#include <string_view>
#include <utility>

#include "common/log.h"

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

/// client_allowed_sans, kept with the context (its app data; the context's
/// deleter frees it).
struct AllowedSans {
  std::vector<std::string> names;
};

/// The leaf certificate's names against client_allowed_sans; the chain's
/// own verdict (`ok`) comes first. `acceptUnverified`: RequireAnyClientCert.
int checkSans(int ok, X509_STORE_CTX* store, bool acceptUnverified) {
  if (!ok && !acceptUnverified) return 0;
  if (X509_STORE_CTX_get_error_depth(store) != 0) return 1;
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* allowed = ssl ? static_cast<AllowedSans*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)))
                      : nullptr;
  if (!allowed) return 0;
  auto sans = certificateSans(X509_STORE_CTX_get_current_cert(store));
  if (sanAllowed(sans, allowed->names)) return 1;
  std::string have;
  for (const auto& n : sans) have += (have.empty() ? "" : ",") + n;
  log::warn("TLS client certificate refused: no subject alternative name is in "
            "tls_server_config.client_allowed_sans",
            "sans=" + log::quote(have.empty() ? "none" : have));
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}
int checkSansVerified(int ok, X509_STORE_CTX* store) { return checkSans(ok, store, false); }
int checkSansAny(int ok, X509_STORE_CTX* store) { return checkSans(ok, store, true); }

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio memBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
}

/// cert: inline, leaf first, then the chain.
bool useCertificatePem(SSL_CTX* x, const std::string& pem) {
  Bio bio = memBio(pem);
  if (!bio) return false;
  X509* leaf = PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr);
  if (!leaf) return false;
  int ok = SSL_CTX_use_certificate(x, leaf);
  X509_free(leaf);
  if (ok != 1) return false;
  SSL_CTX_clear_chain_certs(x);
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(x, ca) != 1) {
      X509_free(ca);
      return false;
    }
  }
  ERR_clear_error();  // the end of the PEM text reads as an error
  return true;
}

bool useKeyPem(SSL_CTX* x, const std::string& pem) {
  Bio bio = memBio(pem);
  if (!bio) return false;
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (!k) return false;
  int ok = SSL_CTX_use_PrivateKey(x, k);
  EVP_PKEY_free(k);
  return ok == 1;
}

/// client_ca: inline; trusted for verification and named in the request.
bool useClientCaPem(SSL_CTX* x, const std::string& pem) {
  Bio bio = memBio(pem);
  if (!bio) return false;
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  int n = 0;
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    ++n;
    X509_STORE_add_cert(SSL_CTX_get_cert_store(x), ca);
    if (X509_NAME* dn = X509_NAME_dup(X509_get_subject_name(ca))) sk_X509_NAME_push(names, dn);
    X509_free(ca);
  }
  ERR_clear_error();
  if (n == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return false;
  }
  SSL_CTX_set_client_CA_list(x, names);
  return true;
}

}  // namespace

std::vector<std::string> certificateSans(const void* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(
      static_cast<const X509*>(cert), NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    auto text = [](const ASN1_STRING* a) {
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(a)),
                         static_cast<size_t>(ASN1_STRING_length(a)));
    };
    if (g->type == GEN_DNS) {
      out.push_back("DNS:" + text(g->d.dNSName));
    } else if (g->type == GEN_EMAIL) {
      out.push_back("email:" + text(g->d.rfc822Name));
    } else if (g->type == GEN_URI) {
      out.push_back("URI:" + text(g->d.uniformResourceIdentifier));
    } else if (g->type == GEN_IPADD) {
      std::string raw = text(g->d.iPAddress);
      char buf[INET6_ADDRSTRLEN] = {};
      int af = raw.size() == 4 ? AF_INET : raw.size() == 16 ? AF_INET6 : 0;
      if (af && inet_ntop(af, raw.data(), buf, sizeof buf)) out.push_back(std::string("IP:") + buf);
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

bool sanAllowed(const std::vector<std::string>& sans, const std::vector<std::string>& allowed) {
  for (const auto& s : sans) {
    std::string_view v = std::string_view(s).substr(s.find(':') + 1);
    for (const auto& a : allowed) {
      if (v == a) return true;
    }
  }
  return false;
}

std::vector<std::string> TlsServerConfig::files() const {
  std::vector<std::string> f;
  for (const std::string* p : {&certFile, &keyFile, &clientCaFile}) {
    if (!p->empty()) f.push_back(*p);
  }
  return f;
}

Status validateTlsConfig(const TlsServerConfig& c) {
  if (c.certFile.empty() == c.cert.empty())
    return bad(c.cert.empty() ? "tls_server_config.cert_file is required (or cert, inline)"
                              : "tls_server_config: give cert or cert_file, not both");
  if (c.keyFile.empty() == c.key.empty())
    return bad(c.key.empty() ? "tls_server_config.key_file is required (or key, inline)"
                             : "tls_server_config: give key or key_file, not both");
  if (!c.clientCaFile.empty() && !c.clientCa.empty())
    return bad("tls_server_config: give client_ca or client_ca_file, not both");
  const bool hasCa = !c.clientCaFile.empty() || !c.clientCa.empty();
  bool known = false;
  for (auto t : kClientAuthTypes) known |= t == c.clientAuthType;
  if (!known) {
    return bad("tls_server_config.client_auth_type: unknown " + c.clientAuthType +
               " (NoClientCert, RequestClientCert, RequireAnyClientCert, "
               "VerifyClientCertIfGiven, RequireAndVerifyClientCert)");
  }
  bool verifies = c.clientAuthType == "VerifyClientCertIfGiven" ||
                  c.clientAuthType == "RequireAndVerifyClientCert";
  if (verifies && !hasCa)
    return bad("tls_server_config.client_ca_file is required by client_auth_type " +
               c.clientAuthType);
  if (!verifies && hasCa && c.clientAuthType == "NoClientCert")
    return bad(
        "tls_server_config.client_ca_file is set but client_auth_type is NoClientCert");
  // With another type a client may send no certificate, leaving no name to
  // check: the list would protect nothing.
  if (!c.clientAllowedSans.empty() && c.clientAuthType != "RequireAnyClientCert" &&
      c.clientAuthType != "RequireAndVerifyClientCert")
    return bad("tls_server_config.client_allowed_sans needs client_auth_type "
               "RequireAndVerifyClientCert (or RequireAnyClientCert), not " + c.clientAuthType);
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
  std::shared_ptr<AllowedSans> sans;
  if (!c.clientAllowedSans.empty()) sans = std::make_shared<AllowedSans>(AllowedSans{c.clientAllowedSans});
  TlsContext ctx(SSL_CTX_new(TLS_server_method()), [sans](SSL_CTX* p) { SSL_CTX_free(p); });
  if (!ctx) return bad("cannot make a TLS context: " + sslError());
  SSL_CTX* x = ctx.get();
  SSL_CTX_set_app_data(x, sans.get());
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
  if (!c.cert.empty()) {
    if (!useCertificatePem(x, c.cert)) return bad("tls_server_config.cert: " + sslError());
  } else if (SSL_CTX_use_certificate_chain_file(x, c.certFile.c_str()) != 1) {
    return makeError(EINVAL, c.certFile, "tls_server_config.cert_file: " + sslError());
  }
  if (!c.key.empty()) {
    if (!useKeyPem(x, c.key)) return bad("tls_server_config.key: " + sslError());
  } else if (SSL_CTX_use_PrivateKey_file(x, c.keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
    return makeError(EINVAL, c.keyFile, "tls_server_config.key_file: " + sslError());
  }
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
  } else if (!c.clientCa.empty() && !useClientCaPem(x, c.clientCa)) {
    return bad("tls_server_config.client_ca: no PEM certificate");
  }
  const std::string& t = c.clientAuthType;
  if (t == "RequestClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER, acceptAny);
  } else if (t == "RequireAnyClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       sans ? checkSansAny : acceptAny);
  } else if (t == "VerifyClientCertIfGiven") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER, nullptr);
  } else if (t == "RequireAndVerifyClientCert") {
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       sans ? checkSansVerified : nullptr);
  } else {
    SSL_CTX_set_verify(x, SSL_VERIFY_NONE, nullptr);
  }
  // Session resumption needs a context id when clients are verified.
  static constexpr unsigned char kSid[] = "memcg_exporter";
  SSL_CTX_set_session_id_context(x, kSid, sizeof kSid - 1);
  return ctx;
}

}  // namespace memcg

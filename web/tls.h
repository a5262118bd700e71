// TLS for the HTTP server (OpenSSL, Debian's libssl): the tls_server_config
// block of --web.config.file (Prometheus exporter-toolkit's format, see
// web_config.h) turned into an OpenSSL server context.
//
//   tls_server_config:
//     cert_file: server.crt          # PEM, leaf first, then the chain
//     key_file: server.key           # PEM
//     # or cert: / key: with the PEM text inline (one of each pair)
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: ca.crt         # needed by the two Verify* types
//                                    # (or client_ca: the PEM text inline)
//     client_allowed_sans: [a.example, 10.0.0.1, ops@example.com, spiffe://x/y]
//     min_version: TLS12             # TLS10..TLS13, default TLS12
//     max_version: TLS13             # default TLS13
//     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...]  # IANA
//                                    # names as Go spells them; TLS <= 1.2 only
//                                    # (as in Go, TLS 1.3's suites are fixed)
//     prefer_server_cipher_suites: true
//     curve_preferences: [X25519, CurveP256, CurveP384, CurveP521]
//
// client_auth_type follows Go's crypto/tls.ClientAuthType:
//   NoClientCert               no certificate asked for
//   RequestClientCert          asked for, not required, not verified
//   RequireAnyClientCert       required, not verified
//   VerifyClientCertIfGiven    verified against client_ca_file when sent
//   RequireAndVerifyClientCert required and verified against client_ca_file
// client_allowed_sans (with RequireAnyClientCert or RequireAndVerifyClientCert,
// as exporter-toolkit demands): the client certificate needs a DNS, IP,
// e-mail or URI subject alternative name equal to one of the list, else the
// handshake is refused (TLS alert access_denied) and the reason is logged
// with the names the certificate has.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX, kept out of this header

namespace memcg {

struct TlsServerConfig {
  std::string certFile;
  std::string keyFile;
  std::string clientAuthType = "NoClientCert";
  std::string clientCaFile;
  std::string minVersion = "TLS12";
  std::string maxVersion = "TLS13";
  std::vector<std::string> cipherSuites;  ///< empty: OpenSSL's defaults
  bool preferServerCipherSuites = true;
  std::vector<std::string> curvePreferences;  ///< empty: OpenSSL's defaults
  std::string cert;      ///< inline PEM instead of certFile
  std::string key;       ///< inline PEM instead of keyFile
  std::string clientCa;  ///< inline PEM instead of clientCaFile
  std::vector<std::string> clientAllowedSans;  ///< empty: any certificate the type accepts

  /// The files it reads (to notice a changed certificate).
  std::vector<std::string> files() const;
};

/// An OpenSSL server context, shared by the connections made with it (a
/// reloaded config makes a new one; connections keep theirs).
using TlsContext = std::shared_ptr<ssl_ctx_st>;

/// Checks the values of a parsed block (names, versions, which files the
/// client_auth_type needs). Errors say which key is wrong.
Status validateTlsConfig(const TlsServerConfig& c);

/// The subject alternative names of `cert` (an X509*) as "DNS:a", "IP:10.0.0.1",
/// "email:x@y", "URI:spiffe://..."; and whether one of them (without its
/// prefix) is in `allowed`.
std::vector<std::string> certificateSans(const void* cert);
bool sanAllowed(const std::vector<std::string>& sans, const std::vector<std::string>& allowed);

/// Builds the context: loads and matches the certificate and key, the client
/// CA, versions, suites and curves. Errors name the file or key.
Result<TlsContext> makeTlsContext(const TlsServerConfig& c);

}  // namespace memcg

// TLS for the HTTP server (OpenSSL, Debian's libssl): the tls_server_config
// block of --web.config.file (Prometheus exporter-toolkit's format, see
// web_config.h) turned into an OpenSSL server context.
//
//   tls_server_config:
//     cert_file: server.crt          # PEM, leaf first, then the chain
//     key_file: server.key           # PEM
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: ca.crt         # needed by the two Verify* types
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
// client_allowed_sans is not implemented and refused with that reason.
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

  /// The files it reads (to notice a changed certificate).
  std::vector<std::string> files() const;
};

/// An OpenSSL server context, shared by the connections made with it (a
/// reloaded config makes a new one; connections keep theirs).
using TlsContext = std::shared_ptr<ssl_ctx_st>;

/// Checks the values of a parsed block (names, versions, which files the
/// client_auth_type needs). Errors say which key is wrong.
Status validateTlsConfig(const TlsServerConfig& c);

/// Builds the context: loads and matches the certificate and key, the client
/// CA, versions, suites and curves. Errors name the file or key.
Result<TlsContext> makeTlsContext(const TlsServerConfig& c);

}  // namespace memcg

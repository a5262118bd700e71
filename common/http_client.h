// The one outbound HTTP client (libcurl): the notifier's posts to
// Alertmanager and the fleet puller's reads of Alertmanager's alerts go
// through it. http:// and https:// with the options of Prometheus'
// http_config that a client of Alertmanager needs: tls_config (CA file,
// client certificate and key, server name, insecure_skip_verify), basic_auth
// (password or password_file) and authorization (type + credentials or
// credentials_file). Files named by the config are read at every request,
// as Prometheus does, so a rotated secret or certificate is picked up
// without a restart. One request per connection, one deadline over resolve,
// connect, TLS handshake, write and read. Never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg {

struct TlsClientConfig {
  std::string caFile;    ///< PEM CAs the server's certificate must chain to ("" = system)
  std::string certFile;  ///< client certificate (PEM), with keyFile
  std::string keyFile;
  std::string serverName;  ///< name the server's certificate is checked against (and SNI)
  bool insecureSkipVerify = false;
};

struct HttpClientConfig {
  TlsClientConfig tls;
  bool basicAuth = false;
  std::string username, password, passwordFile;
  bool authorization = false;
  std::string authType = "Bearer";
  std::string credentials, credentialsFile;
};

/// Checks what can be checked before a request: both or neither of
/// cert_file/key_file, one of password/password_file, one of
/// credentials/credentials_file, not basic_auth and authorization together,
/// the files readable. Errors say which field.
Status validateHttpClientConfig(const HttpClientConfig& c);

struct ClientUrl {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< a name, an IPv4 address or an IPv6 address without brackets
  std::string port;    ///< "80"/"443" when the URL names none
  std::string path;    ///< starts with '/'; no trailing '/' unless it is "/"
  std::string text;    ///< the URL as given (labels, logs)
};

/// Parses "http[s]://host[:port][/path]" (no credentials, query or fragment).
Result<ClientUrl> parseClientUrl(std::string_view url);

/// One query parameter's value, percent-encoded (RFC 3986 unreserved bytes
/// stay, every other byte is %XX). A space is %20, or '+' with spaceAsPlus
/// (Go's url.QueryEscape, which Prometheus' generator URLs use).
std::string queryEscape(std::string_view s, bool spaceAsPlus = false);

struct ClientReply {
  int status = 0;
  std::string body;  ///< at most maxBody bytes
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientConfig config);

  /// POSTs `body`. Errors: ETIMEDOUT past the deadline, ECONNREFUSED /
  /// EHOSTUNREACH for connect and resolve, EPROTO for TLS (a wrong CA, a
  /// refused client certificate), EIO otherwise; the detail is libcurl's.
  Result<ClientReply> post(const ClientUrl& url, const std::string& path,
                           std::string_view contentType, std::string_view body,
                           int64_t timeoutMs, size_t maxBody = 4096) const;
  /// GETs path (with its query). A body above maxBody is an error (EMSGSIZE).
  Result<ClientReply> get(const ClientUrl& url, const std::string& path,
                          int64_t timeoutMs, size_t maxBody) const;

  const HttpClientConfig& config() const { return config_; }

 private:
  Result<ClientReply> perform(const ClientUrl& url, const std::string& path, bool isPost,
                              std::string_view contentType, std::string_view body,
                              int64_t timeoutMs, size_t maxBody,
                              bool bodyLimitIsError) const;
  HttpClientConfig config_;
};

}  // namespace memcg

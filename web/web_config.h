// --web.config.file: Prometheus exporter-toolkit's web configuration format
// (YAML), so a file shared with node_exporter starts here too:
//
//   tls_server_config:         # serve HTTPS (tls.h has every key)
//     cert_file: server.crt    # or cert: / key: with the PEM text inline
//     key_file: server.key
//     client_allowed_sans: [...]   # with a client_auth_type that requires a certificate
//   http_server_config:
//     headers:                 # added to every response
//       X-Frame-Options: deny
//     http2: true              # accepted; HTTP/2 is not served (logged once)
//   basic_auth_users:          # user -> bcrypt hash ($2a$, $2b$ or $2y$)
//     alice: $2y$10$...
//   rate_limit:                # one token bucket for the whole server:
//     interval: 1s             #   a token every interval (0: no limit)
//     burst: 20                #   at most this many saved; none left: 429
//
// Every request then needs HTTP basic auth with one of these users (the
// policy in auth.h applies it per route). Hashes are verified with
// libxcrypt's crypt_r; a verified {user, hash, password} is cached (bcrypt
// costs tens of ms per check), an unknown user is checked against a dummy
// hash so the answer takes as long, and the result is compared in constant
// time. The file, and the certificate, key and client CA files it names, are
// re-read when one changes (checked at most once a second); a bad new
// version is logged and the old one kept. New connections get the new
// certificate; open ones keep theirs. Whether the server speaks TLS at all
// is fixed at start: a reload that adds or removes tls_server_config is
// refused (restart to switch).
//
// Keys: one this exporter accepts but does not act on, and whose absence
// cannot make it less safe (http_server_config.http2), is logged once by
// name. Every other key it does not know is refused with the reason (the
// exporter exits 2): an unknown key may be a security setting, or a
// misspelt one, that would otherwise be silently dropped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "web/routes.h"
#include "web/tls.h"

namespace memcg {

/// rate_limit: a token bucket over every request of the server.
struct RateLimit {
  int64_t intervalMs = 0;  ///< a new token every interval; 0 = no limit
  int64_t burst = 0;       ///< tokens saved at most
  bool operator==(const RateLimit&) const = default;
};

struct WebConfig {
  std::map<std::string, std::string> basicAuthUsers;  ///< user -> bcrypt hash
  std::optional<TlsServerConfig> tls;                 ///< tls_server_config
  /// http_server_config.headers, added to every response, in file order.
  std::vector<std::pair<std::string, std::string>> headers;
  RateLimit rateLimit;
  /// Keys accepted but not acted on (e.g. "http_server_config.http2"),
  /// each logged once by name.
  std::vector<std::string> ignored;
};

/// A token bucket (rate_limit); thread-safe. Exporter-toolkit's semantics:
/// starts full, refills one token per interval up to burst.
class RateLimiter {
 public:
  /// True if a request may go on now (takes a token).
  bool admit(const RateLimit& limit, int64_t nowMs);

 private:
  std::mutex mu_;
  RateLimit limit_;
  double tokens_ = 0;
  int64_t lastMs_ = 0;
};

/// Parses the YAML text of a web config file. Errors name the key.
Result<WebConfig> parseWebConfig(std::string_view yaml);
/// Reads and parses `path`.
Result<WebConfig> loadWebConfig(const std::string& path);

/// True if `password` matches the crypt(3) `hash` (constant-time compare).
bool verifyPassword(const std::string& password, const std::string& hash);

class WebAuth {
 public:
  /// Throws std::invalid_argument with the reason if `path` is bad.
  explicit WebAuth(std::string path);

  /// True if `req` carries the basic auth of a configured user (or the file
  /// has no users).
  bool allowed(const http::Request& req);

  /// False when rate_limit has no token left for a request now.
  bool admit();

  /// http_server_config.headers as header lines ("Name: value\r\n" each),
  /// for every response.
  std::string responseHeaders();

  /// The TLS context for a new connection; null if the file has no
  /// tls_server_config (plain HTTP).
  TlsContext tlsContext();

 private:
  struct FileStamp {
    std::string path;
    struct timespec mtime {};
    ino_t ino = 0;
    off_t size = 0;
    bool operator==(const FileStamp& o) const;
  };
  std::vector<FileStamp> stamps() const;
  void maybeReload();
  void apply(WebConfig c);  ///< under mu_: headers text, log what is ignored

  std::string path_;
  std::mutex mu_;
  WebConfig config_;
  int64_t lastCheckMs_ = 0;
  std::vector<FileStamp> stamps_;  ///< the config file and its TLS files
  TlsContext tls_;
  std::map<std::string, bool> cache_;  ///< hash '\0' user '\0' password -> ok
  std::string headerLines_;            ///< responseHeaders()
  std::vector<std::string> loggedIgnored_;
  RateLimiter limiter_;
};

}  // namespace memcg

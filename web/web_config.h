// --web.config.file: Prometheus exporter-toolkit's web configuration format
// (YAML), the part this exporter implements:
//
//   tls_server_config:         # serve HTTPS (tls.h has every key)
//     cert_file: server.crt
//     key_file: server.key
//   basic_auth_users:          # user -> bcrypt hash ($2a$, $2b$ or $2y$)
//     alice: $2y$10$...
//
// Every request then needs HTTP basic auth with one of these users. Hashes
// are verified with libxcrypt's crypt_r; a verified {user, hash, password}
// is cached (bcrypt costs tens of ms per check), an unknown user is checked
// against a dummy hash so the answer takes as long, and the result is
// compared in constant time. The file, and the certificate, key and client
// CA files it names, are re-read when one changes (checked at most once a
// second); a bad new version is logged and the old one kept. New
// connections get the new certificate; open ones keep theirs. Whether the
// server speaks TLS at all is fixed at start: a reload that adds or removes
// tls_server_config is refused (restart to switch).
//
// Not implemented, and refused with that reason: http_server_config and
// tls_server_config.client_allowed_sans. Any other key is refused too, as
// exporter-toolkit does.
//
// The controller's mutating endpoints keep their bearer token: a request
// to /api/v1/controller/ that carries "Authorization: Bearer" is left to
// that check (one Authorization header cannot carry both).
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

struct WebConfig {
  std::map<std::string, std::string> basicAuthUsers;  ///< user -> bcrypt hash
  std::optional<TlsServerConfig> tls;                 ///< tls_server_config
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

  /// True if `req` may be served (basic auth, or no users configured).
  bool allowed(const http::Request& req);

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

  std::string path_;
  std::mutex mu_;
  WebConfig config_;
  int64_t lastCheckMs_ = 0;
  std::vector<FileStamp> stamps_;  ///< the config file and its TLS files
  TlsContext tls_;
  std::map<std::string, bool> cache_;  ///< hash '\0' user '\0' password -> ok
};

}  // namespace memcg

// --web.config.file: Prometheus exporter-toolkit's web configuration format
// (YAML), the part this exporter implements:
//
//   basic_auth_users:          # user -> bcrypt hash ($2a$, $2b$ or $2y$)
//     alice: $2y$10$...
//
// Every request then needs HTTP basic auth with one of these users. Hashes
// are verified with libxcrypt's crypt_r; a verified {user, hash, password}
// is cached (bcrypt costs tens of ms per check), an unknown user is checked
// against a dummy hash so the answer takes as long, and the result is
// compared in constant time. The file is re-read when it changes (checked at
// most once a second); a bad new version is logged and the old one kept.
//
// Not implemented, and refused with that reason: tls_server_config (the
// HTTP server does not speak TLS yet; put a TLS proxy in front) and
// http_server_config. Any other key is refused too, as exporter-toolkit does.
//
// The controller's mutating endpoints keep their bearer token: a request
// to /api/v1/controller/ that carries "Authorization: Bearer" is left to
// that check (one Authorization header cannot carry both).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"
#include "exporter/routes.h"

namespace memcg {

struct WebConfig {
  std::map<std::string, std::string> basicAuthUsers;  ///< user -> bcrypt hash
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

 private:
  void maybeReload();

  std::string path_;
  std::mutex mu_;
  WebConfig config_;
  int64_t lastCheckMs_ = 0;
  struct timespec mtime_ {};
  ino_t ino_ = 0;
  off_t size_ = 0;
  std::map<std::string, bool> cache_;  ///< hash '\0' user '\0' password -> ok
};

}  // namespace memcg

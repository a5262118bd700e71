// The one auth policy of the HTTP surface. Every request passes it in
// dispatch() (routes.h) before any handler, unknown paths included; a route
// row says what it needs (http::Access) and handlers hold no auth code.
//
// In order:
//   1. rate_limit of --web.config.file: no token left -> 429.
//   2. On a route that takes the bearer token (kToken, kTokenRead) with a
//      token configured (--controller.token-file) and a request that sends
//      "Authorization: Bearer ...": the token decides (403 when wrong, 401
//      when empty). One Authorization header cannot carry both a token and
//      basic auth, and the token is the stronger of the two credentials.
//   3. Otherwise basic auth of --web.config.file when it has users ->
//      401 with a Basic challenge.
//   4. Then kToken needs the token: 403 without a token file, 401 without
//      "Bearer <token>", 403 for a wrong one; kTokenRead only when a token is
//      configured.
// TLS client certificates (client_auth_type, client_allowed_sans) are
// checked in the handshake (tls.h), before a request exists.
// Token and password comparisons take constant time (common/constant_time.h).
#pragma once

#include <string>

#include "web/routes.h"

namespace memcg {
class WebAuth;
}

namespace memcg::web {

class AuthPolicy {
 public:
  /// `webConfig`: --web.config.file (null: none; not owned). `token`: the
  /// bearer token (empty: none, mutating routes are refused).
  AuthPolicy(WebAuth* webConfig, std::string token);

  /// Reads a token file: the first line, trimmed. Throws std::runtime_error
  /// if it cannot be read or is empty (start-up only).
  static std::string readTokenFile(const std::string& path);

  /// False if `req` may go on to a route needing `need`; true with `resp`
  /// set to the refusal otherwise.
  bool refuse(const http::Request& req, http::Access need, http::Response& resp) const;

 private:
  /// The token check of steps 2 and 4: false when `authHeader` carries it.
  bool refuseToken(const http::Request& req, http::Access need, std::string_view authHeader,
                   http::Response& resp) const;

  WebAuth* webConfig_;
  std::string token_;
};

}  // namespace memcg::web

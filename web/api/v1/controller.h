// JSON handlers for /api/v1/controller/..., registered as rows of the route
// table (web/routes.h). Thin: validate, call the Controller, render its
// answer; the preamble they share (503 while disabled, a JSON object body)
// is one wrapper (endpoint()). Auth is the route table's (web/auth.h): the
// rows declare the bearer token.
//
//   POST /api/v1/controller/protect    {"cgroup":"/a","start_margin_bytes":N,
//                                       "target_margin_bytes":M[,"floor_bytes":F]}
//   POST /api/v1/controller/unprotect  {"cgroup":"/a"}
//   GET  /api/v1/controller/state
//
// Mutating endpoints need "Authorization: Bearer <token>", the token being the
// first line of --controller.token-file; without a token file they are refused
// (403). GET state needs the token too when one is configured.
// Errors: {"error": "<reason>"} with 400 (bad JSON/field), 401 (no/malformed
// Authorization), 403 (wrong token, no token file, root or outside
// --controller.allow), 404 (unknown cgroup / not protected), 409 (already
// protected with other margins; no limit to keep a margin below), 503
// (controller disabled), 500 (internal).
#pragma once

#include <string>

#include "controller/controller.h"
#include "web/routes.h"

namespace memcg::controller {

using HttpResult = http::Response;

class ControllerApi {
 public:
  /// `controller` null = disabled (every endpoint answers 503).
  explicit ControllerApi(Controller* controller);

  HttpResult handleProtect(const std::string& body) const;
  HttpResult handleUnprotect(const std::string& body) const;
  HttpResult handleState() const;

  /// POST protect, POST unprotect (Access::kToken), GET state
  /// (Access::kTokenRead) under /api/v1/controller/.
  void registerRoutes(http::Routes& routes) const;

 private:
  /// The shared preamble: 503 while disabled, and for a mutating endpoint
  /// parse `body` as a JSON object; then `fn(body object or null)`.
  template <typename Fn>
  HttpResult endpoint(const std::string* body, Fn&& fn) const;

  Controller* controller_;
};

int statusFor(ErrorKind k);

}  // namespace memcg::controller

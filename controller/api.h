// JSON handlers for /api/v1/controller/... (the lead mounts them on the
// civetweb server). Thin: validate, call the Controller, render its answer.
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

namespace memcg::controller {

struct HttpResult {
  int status = 200;
  std::string body;  ///< JSON
  std::string contentType = "application/json";
};

class ControllerApi {
 public:
  /// `controller` null = disabled (every endpoint answers 503). `token`
  /// empty = mutating endpoints refused.
  ControllerApi(Controller* controller, std::string token);

  /// Reads a token file: the first line, trimmed. Throws std::runtime_error
  /// if it cannot be read or is empty (start-up only).
  static std::string readTokenFile(const std::string& path);

  HttpResult handleProtect(const std::string& body, const std::string& authHeader) const;
  HttpResult handleUnprotect(const std::string& body, const std::string& authHeader) const;
  HttpResult handleState(const std::string& authHeader) const;

 private:
  /// nullopt when authorized.
  std::optional<HttpResult> authorize(const std::string& authHeader, bool mutating) const;

  Controller* controller_;
  std::string token_;
};

HttpResult jsonError(int status, std::string_view reason);
int statusFor(ErrorKind k);

}  // namespace memcg::controller

#include "web/auth.h"

#include <stdexcept>

#include "common/constant_time.h"
#include "common/file.h"
#include "common/log.h"
#include "web/web_config.h"

namespace memcg::web {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

constexpr std::string_view kBearer = "Bearer ";

bool isBearer(std::string_view h) {
  return h.size() >= kBearer.size() && h.substr(0, kBearer.size()) == kBearer;
}

}  // namespace

AuthPolicy::AuthPolicy(WebAuth* webConfig, std::string token)
    : webConfig_(webConfig), token_(std::move(token)) {}

std::string AuthPolicy::readTokenFile(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text.ok()) {
    throw std::runtime_error("--controller.token-file: cannot read: " + text.error().message());
  }
  std::string_view first = *text;
  first = first.substr(0, first.find('\n'));
  std::string t(trim(first));
  if (t.empty()) throw std::runtime_error("--controller.token-file: empty token in " + path);
  return t;
}

bool AuthPolicy::refuseToken(const http::Request& req, http::Access need,
                             std::string_view authHeader, http::Response& resp) const {
  const bool mutating = need == http::Access::kToken;
  std::string why;
  int status = 0;
  if (token_.empty()) {
    if (!mutating) return false;
    status = 403;
    why = "mutating endpoints need --controller.token-file";
  } else {
    std::string_view h = trim(authHeader);
    if (h.size() <= kBearer.size() || !isBearer(h)) {
      status = 401;
      why = "missing or malformed Authorization: Bearer <token>";
    } else if (!constantTimeEquals(trim(h.substr(kBearer.size())), token_)) {
      status = 403;
      why = "invalid token";
    } else {
      return false;
    }
  }
  // A refused command is worth a line (the Alertmanager webhook, a reload).
  if (mutating)
    log::warn("request refused", "path=" + log::quote(req.path) + " status=" +
                                     std::to_string(status) + " reason=" + log::quote(why));
  http::replyError(resp, status, why);
  return true;
}

bool AuthPolicy::refuse(const http::Request& req, http::Access need, http::Response& resp) const {
  if (webConfig_ && !webConfig_->admit()) {
    resp = http::Response{429, "429 Too Many Requests (rate_limit of --web.config.file)\n",
                          "text/plain; charset=utf-8"};
    return true;
  }
  const bool tokenRoute = need != http::Access::kWebConfig;
  const std::string authHeader = tokenRoute ? req.header("Authorization") : std::string();
  if (tokenRoute && !token_.empty() && isBearer(trim(authHeader)))
    return refuseToken(req, need, authHeader, resp);
  if (webConfig_ && !webConfig_->allowed(req)) {
    resp = http::Response{401, "401 Unauthorized\n", "text/plain; charset=utf-8"};
    resp.headers.emplace_back("WWW-Authenticate", "Basic realm=\"memcg_exporter\"");
    return true;
  }
  return tokenRoute && refuseToken(req, need, authHeader, resp);
}

}  // namespace memcg::web

// The rule engine's HTTP rows (web/routes.h):
//
//   GET  /api/v1/rules[?type=alert|record]   Prometheus' shape
//   GET  /api/v1/alerts                      Prometheus' shape
//   POST /-/reload                           reload --rules.file (bearer token,
//                                            Access::kToken); 500 with the
//                                            reason when a file is bad
//   POST /api/v1/alertmanager                Alertmanager's webhook (payload
//                                            version 4, Access::kToken)
//
// The webhook: each alert of the payload with `action: protect` is handed to
// Actions (firing protects, resolved starts the hold); alerts are
// deduplicated by fingerprint (a repeated notification of the same state is
// not applied again). Answers 200 with {"results": [{fingerprint, status,
// cgroup, result}]} (refusals included: Alertmanager must not retry them),
// 400 for a payload that is not version 4; the route table answers 401/403
// for the token (web/auth.h) and 413 above its body limit.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "web/routes.h"
#include "rules/actions.h"
#include "rules/manager.h"

namespace memcg::rules {

class RulesApi {
 public:
  RulesApi(Manager& manager, Actions& actions);

  http::Response handleWebhook(const std::string& body);
  http::Response handleReload();
  void registerRoutes(http::Routes& routes);

 private:
  Manager& manager_;
  Actions& actions_;
  std::mutex mu_;
  std::map<std::string, std::string> seen_;  // fingerprint -> status last applied
};

}  // namespace memcg::rules

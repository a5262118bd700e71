// The Alertmanagers the notifier posts to and the fleet puller reads from:
// each --rules.alertmanager-url, and the file of --rules.alertmanager-config,
// shaped like Prometheus' `alerting.alertmanagers` (alertmanager_config):
//
//   alertmanagers:            # or the whole `alerting:` block of prometheus.yml
//     - static_configs: [{targets: ["am1:9093", "am2:9093"]}]   # an HA pair
//       scheme: https          # http (default) or https
//       path_prefix: /am       # before /api/v2/...
//       timeout: 10s           # default --rules.alertmanager.timeout
//       api_version: v2        # only v2
//       tls_config: {ca_file, cert_file, key_file, server_name, insecure_skip_verify}
//       basic_auth: {username, password | password_file}
//       authorization: {type, credentials | credentials_file}
//     - url: https://am3:9093/am   # this exporter's shorthand for one target
//       http_config: {tls_config: ..., basic_auth: ...}   # or inline, as above
//
// Every target is one Alertmanager (one `alertmanager` label value: its URL).
// An unknown key is an error naming it, as in Prometheus: a misspelt
// ca_file must not silently mean "system CAs".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/http_client.h"
#include "common/result.h"

namespace memcg::rules {

struct AlertmanagerTarget {
  ClientUrl url;  ///< scheme://target/path_prefix; url.text is its label
  int64_t timeoutMs = 10000;
  std::shared_ptr<const HttpClient> client;  ///< shared by the targets of one entry
};

/// The targets of --rules.alertmanager-url (plain, no auth) with `timeoutMs`.
Result<std::vector<AlertmanagerTarget>> alertmanagersFromUrls(
    const std::vector<std::string>& urls, int64_t timeoutMs);

/// Parses a config file's text (`origin` names it in errors).
Result<std::vector<AlertmanagerTarget>> parseAlertmanagerConfig(const std::string& yaml,
                                                                const std::string& origin,
                                                                int64_t defaultTimeoutMs);

/// Reads and parses the file.
Result<std::vector<AlertmanagerTarget>> loadAlertmanagerConfig(const std::string& path,
                                                               int64_t defaultTimeoutMs);

}  // namespace memcg::rules

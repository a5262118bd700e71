#include "rules/alertmanager_config.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "common/file.h"
#include "rules/rule_file.h"

namespace memcg::rules {
namespace {

struct Bad {
  std::string what;
};

void onlyKeys(const YAML::Node& n, const std::string& where,
              std::initializer_list<const char*> keys) {
  if (!n.IsMap()) throw Bad{where + ": not a mapping"};
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : keys) ok = ok || k == a;
    if (!ok) throw Bad{where + ": unknown key \"" + k + "\""};
  }
}

std::string str(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw Bad{where + ": not a string"};
  return n.as<std::string>();
}

bool boolean(const YAML::Node& n, const std::string& where) {
  const std::string s = str(n, where);
  if (s == "true") return true;
  if (s == "false") return false;
  throw Bad{where + ": not true or false"};
}

/// tls_config, basic_auth and authorization of `n` (inline or under http_config).
void httpConfig(const YAML::Node& n, const std::string& where, HttpClientConfig& c) {
  if (auto t = n["tls_config"]) {
    const std::string w = where + ".tls_config";
    onlyKeys(t, w,
             {"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify",
              "min_version"});
    if (t["ca_file"]) c.tls.caFile = str(t["ca_file"], w + ".ca_file");
    if (t["cert_file"]) c.tls.certFile = str(t["cert_file"], w + ".cert_file");
    if (t["key_file"]) c.tls.keyFile = str(t["key_file"], w + ".key_file");
    if (t["server_name"]) c.tls.serverName = str(t["server_name"], w + ".server_name");
    if (t["insecure_skip_verify"])
      c.tls.insecureSkipVerify =
          boolean(t["insecure_skip_verify"], w + ".insecure_skip_verify");
    if (t["min_version"]) {
      // libcurl with OpenSSL 3 negotiates TLS 1.2 at least, Go's default
      // minimum; a stricter minimum cannot be honoured silently.
      const std::string v = str(t["min_version"], w + ".min_version");
      if (v != "TLS12" && v != "TLS10" && v != "TLS11")
        throw Bad{w + ".min_version: only TLS12 (the floor here) is supported, not " + v};
    }
  }
  if (auto b = n["basic_auth"]) {
    const std::string w = where + ".basic_auth";
    onlyKeys(b, w, {"username", "password", "password_file"});
    c.basicAuth = true;
    if (b["username"]) c.username = str(b["username"], w + ".username");
    if (b["password"]) c.password = str(b["password"], w + ".password");
    if (b["password_file"])
      c.passwordFile = str(b["password_file"], w + ".password_file");
  }
  if (auto a = n["authorization"]) {
    const std::string w = where + ".authorization";
    onlyKeys(a, w, {"type", "credentials", "credentials_file"});
    c.authorization = true;
    if (a["type"]) c.authType = str(a["type"], w + ".type");
    if (a["credentials"]) c.credentials = str(a["credentials"], w + ".credentials");
    if (a["credentials_file"])
      c.credentialsFile = str(a["credentials_file"], w + ".credentials_file");
  }
}

std::vector<AlertmanagerTarget> entry(const YAML::Node& n, const std::string& where,
                                      int64_t defaultTimeoutMs) {
  onlyKeys(n, where,
           {"url", "static_configs", "scheme", "path_prefix", "timeout", "api_version",
            "http_config", "tls_config", "basic_auth", "authorization",
            "follow_redirects", "enable_http2"});
  if (n["api_version"] && str(n["api_version"], where + ".api_version") != "v2")
    throw Bad{where + ".api_version: only v2 (Alertmanager's v1 API is gone)"};
  int64_t timeout = defaultTimeoutMs;
  if (n["timeout"]) {
    auto t = parseDurationMs(str(n["timeout"], where + ".timeout"));
    if (!t.ok() || *t <= 0) throw Bad{where + ".timeout: not a positive duration"};
    timeout = *t;
  }
  HttpClientConfig hc;
  if (n["http_config"]) {
    if (n["tls_config"] || n["basic_auth"] || n["authorization"])
      throw Bad{where +
                ": http_config and inline tls_config/basic_auth/authorization together"};
    onlyKeys(n["http_config"], where + ".http_config",
             {"tls_config", "basic_auth", "authorization", "follow_redirects",
              "enable_http2"});
    httpConfig(n["http_config"], where + ".http_config", hc);
  } else {
    httpConfig(n, where, hc);
  }
  if (auto s = validateHttpClientConfig(hc); !s.ok())
    throw Bad{where + ": " + s.error().path + ": " + s.error().detail};
  auto client = std::make_shared<const HttpClient>(hc);

  std::vector<std::string> urls;
  if (n["url"]) {
    if (n["static_configs"] || n["scheme"] || n["path_prefix"])
      throw Bad{where + ": url and static_configs/scheme/path_prefix together"};
    urls.push_back(str(n["url"], where + ".url"));
  } else {
    std::string scheme = "http";
    if (n["scheme"]) scheme = str(n["scheme"], where + ".scheme");
    if (scheme != "http" && scheme != "https")
      throw Bad{where + ".scheme: http or https, not " + scheme};
    std::string prefix;
    if (n["path_prefix"]) prefix = str(n["path_prefix"], where + ".path_prefix");
    if (!prefix.empty() && prefix.front() != '/') prefix = "/" + prefix;
    const auto sc = n["static_configs"];
    if (!sc || !sc.IsSequence() || sc.size() == 0)
      throw Bad{where + ": neither url nor static_configs"};
    for (size_t i = 0; i < sc.size(); ++i) {
      const std::string w = where + ".static_configs[" + std::to_string(i) + "]";
      onlyKeys(sc[i], w, {"targets", "labels"});
      const auto ts = sc[i]["targets"];
      if (!ts || !ts.IsSequence()) throw Bad{w + ".targets: not a list"};
      for (size_t j = 0; j < ts.size(); ++j)
        urls.push_back(scheme + "://" + str(ts[j], w + ".targets") + prefix);
    }
  }
  std::vector<AlertmanagerTarget> out;
  for (const auto& u : urls) {
    auto p = parseClientUrl(u);
    if (!p.ok()) throw Bad{where + ": " + p.error().detail + ": " + u};
    out.push_back({std::move(*p), timeout, client});
  }
  return out;
}

/// The list under `alertmanagers:`, at the top or in an `alerting:` block.
YAML::Node alertmanagerList(const YAML::Node& doc) {
  if (doc.IsMap() && doc["alerting"]) {
    onlyKeys(doc, "top level", {"alerting"});
    const YAML::Node alerting = doc["alerting"];
    onlyKeys(alerting, "alerting", {"alertmanagers", "alert_relabel_configs"});
    if (alerting["alert_relabel_configs"] && alerting["alert_relabel_configs"].size() > 0)
      throw Bad{"alerting.alert_relabel_configs: not supported"};
    if (!alerting["alertmanagers"]) throw Bad{"alerting.alertmanagers: missing"};
    return alerting["alertmanagers"];
  }
  onlyKeys(doc, "top level", {"alertmanagers"});
  if (!doc["alertmanagers"]) throw Bad{"alertmanagers: missing"};
  return doc["alertmanagers"];
}

}  // namespace

Result<std::vector<AlertmanagerTarget>> alertmanagersFromUrls(
    const std::vector<std::string>& urls, int64_t timeoutMs) {
  std::vector<AlertmanagerTarget> out;
  auto client = std::make_shared<const HttpClient>(HttpClientConfig{});
  for (const auto& u : urls) {
    auto p = parseClientUrl(u);
    if (!p.ok()) return p.error();
    out.push_back({std::move(*p), timeoutMs, client});
  }
  return out;
}

Result<std::vector<AlertmanagerTarget>> parseAlertmanagerConfig(
    const std::string& yaml, const std::string& origin, int64_t defaultTimeoutMs) {
  try {
    const YAML::Node doc = YAML::Load(yaml);
    const YAML::Node list = alertmanagerList(doc);
    if (!list || !list.IsSequence() || list.size() == 0)
      throw Bad{"alertmanagers: not a non-empty list"};
    std::vector<AlertmanagerTarget> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      for (auto& t :
           entry(list[i], "alertmanagers[" + std::to_string(i) + "]", defaultTimeoutMs)) {
        if (!seen.insert(t.url.text).second)
          throw Bad{"alertmanager listed twice: " + t.url.text};
        out.push_back(std::move(t));
      }
    }
    return out;
  } catch (const Bad& b) {
    return makeError(EINVAL, origin, b.what);
  } catch (const YAML::Exception& e) {
    return makeError(EINVAL, origin, std::string("YAML: ") + e.what());
  }
}

Result<std::vector<AlertmanagerTarget>> loadAlertmanagerConfig(const std::string& path,
                                                               int64_t defaultTimeoutMs) {
  auto text = readWholeFile(path);
  if (!text.ok()) return text.error();
  return parseAlertmanagerConfig(*text, path, defaultTimeoutMs);
}

}  // namespace memcg::rules

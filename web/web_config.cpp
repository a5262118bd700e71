#include "web/web_config.h"
#include "common/clock.h"

#include <crypt.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "common/constant_time.h"
#include "common/duration.h"
#include "common/file.h"
#include "common/log.h"

namespace memcg {
namespace {

// A bcrypt hash of a random password nobody knows: an unknown user is
// checked against it, so the answer takes as long as for a known one.
constexpr const char* kDummyHash = "$2b$10$CaksTCc1fpPqZil1BnLv/Oig7XKDf5tm/w3zsqx4WHkvdMJjUPKqy";

std::string base64Decode(std::string_view in, bool& ok) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  ok = in.size() % 4 == 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; ok && i < in.size(); ++i) {
    if (in[i] == '=') {
      ok = i + 2 >= in.size();
      break;
    }
    int v = val(in[i]);
    if (v < 0) {
      ok = false;
      break;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// Intervals and timeouts: the steady clock (common/clock.h).
int64_t nowMs() { return clock::steadyMs(); }

Error bad(const std::string& why) { return makeError(EINVAL, "", why); }

std::optional<std::string> scalar(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  return n.Scalar();
}

Result<std::vector<std::string>> stringList(const YAML::Node& n, const std::string& key) {
  std::vector<std::string> out;
  if (n.IsNull()) return out;
  if (!n.IsSequence()) return bad("tls_server_config." + key + " must be a list");
  for (const auto& e : n) {
    auto s = scalar(e);
    if (!s) return bad("tls_server_config." + key + ": want names");
    out.push_back(*s);
  }
  return out;
}

std::string unknownKey(const std::string& key) {
  return "unknown key " + key +
         " (refused: it may be a security setting this exporter would not apply)";
}

bool isToken(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

/// http_server_config: headers (any header name but the ones the server
/// writes itself), http2 (accepted; only HTTP/1.1 is served).
Status parseHttpServer(const YAML::Node& node, WebConfig& c) {
  if (!node.IsMap()) return bad("http_server_config must be a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "http2") {
      auto s = scalar(v);
      if (!v.IsNull() && (!s || (*s != "true" && *s != "false")))
        return bad("http_server_config.http2 must be true or false");
      if (s && *s == "true") c.ignored.push_back("http_server_config.http2");
    } else if (key == "headers") {
      if (v.IsNull()) continue;
      if (!v.IsMap()) return bad("http_server_config.headers must map header names to values");
      for (const auto& h : v) {
        const std::string name = h.first.Scalar();
        auto value = scalar(h.second);
        if (name.empty() || !std::all_of(name.begin(), name.end(), isToken))
          return bad("http_server_config.headers: bad header name " + log::quote(name));
        // The server's own framing and auth headers: a second copy would
        // make the answer ambiguous to the client (or to a proxy before it).
        for (std::string_view own : {"Content-Type", "Content-Length", "Content-Encoding",
                                     "Transfer-Encoding", "Connection", "Vary",
                                     "WWW-Authenticate", "Keep-Alive"}) {
          if (iequal(name, own))
            return bad("http_server_config.headers: " + name + " is set by the server");
        }
        if (!value || value->find_first_of("\r\n") != std::string::npos)
          return bad("http_server_config.headers." + name + ": want one line of text");
        if (value->empty()) continue;  // exporter-toolkit: unset if blank
        c.headers.emplace_back(name, *value);
      }
    } else {
      return bad(unknownKey("http_server_config." + key));
    }
  }
  return Ok{};
}

/// rate_limit: interval (a duration; 0 = off) and burst (>= 1 when on).
Status parseRateLimit(const YAML::Node& node, WebConfig& c) {
  if (!node.IsMap()) return bad("rate_limit must be a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    auto s = scalar(kv.second);
    if (key == "interval") {
      int64_t ms = 0;
      if (!s || !parseDurationMs(*s, ms))
        return bad("rate_limit.interval: want a duration like 1s or 100ms");
      c.rateLimit.intervalMs = ms;
    } else if (key == "burst") {
      int64_t n = -1;
      if (s) {
        char* end = nullptr;
        errno = 0;
        n = std::strtoll(s->c_str(), &end, 10);
        if (s->empty() || *end != '\0' || errno != 0) n = -1;
      }
      if (n < 0 || n > 1000000) return bad("rate_limit.burst: want an integer 0..1000000");
      c.rateLimit.burst = n;
    } else {
      return bad(unknownKey("rate_limit." + key));
    }
  }
  // A bucket that never holds a token would refuse every request.
  if (c.rateLimit.intervalMs > 0 && c.rateLimit.burst < 1)
    return bad("rate_limit.burst must be at least 1 when rate_limit.interval is set");
  return Ok{};
}

Result<TlsServerConfig> parseTls(const YAML::Node& node) {
  TlsServerConfig t;
  if (!node.IsMap()) return bad("tls_server_config must be a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    std::string* str = key == "cert_file"          ? &t.certFile
                       : key == "key_file"         ? &t.keyFile
                       : key == "cert"             ? &t.cert
                       : key == "key"              ? &t.key
                       : key == "client_ca"        ? &t.clientCa
                       : key == "client_auth_type" ? &t.clientAuthType
                       : key == "client_ca_file"   ? &t.clientCaFile
                       : key == "min_version"      ? &t.minVersion
                       : key == "max_version"      ? &t.maxVersion
                                                   : nullptr;
    if (str) {
      if (v.IsNull()) continue;
      auto s = scalar(v);
      if (!s) return bad("tls_server_config." + key + " must be a string");
      *str = *s;
    } else if (key == "cipher_suites" || key == "curve_preferences" ||
               key == "client_allowed_sans") {
      auto l = stringList(v, key);
      if (!l) return l.error();
      (key == "cipher_suites"       ? t.cipherSuites
       : key == "curve_preferences" ? t.curvePreferences
                                    : t.clientAllowedSans) = std::move(*l);
    } else if (key == "prefer_server_cipher_suites") {
      auto s = scalar(v);
      if (!s || (*s != "true" && *s != "false"))
        return bad("tls_server_config.prefer_server_cipher_suites must be true or false");
      t.preferServerCipherSuites = *s == "true";
    } else {
      return bad(unknownKey("tls_server_config." + key));
    }
  }
  if (auto ok = validateTlsConfig(t); !ok) return ok.error();
  return t;
}

/// exporter-toolkit reads a relative file name from the config file's folder.
void resolveAgainst(const std::string& configPath, TlsServerConfig& t) {
  std::filesystem::path dir = std::filesystem::path(configPath).parent_path();
  for (std::string* f : {&t.certFile, &t.keyFile, &t.clientCaFile}) {
    if (!f->empty() && (*f)[0] != '/') *f = (dir / *f).string();
  }
}

}  // namespace

Result<WebConfig> parseWebConfig(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return bad(std::string("not YAML: ") + e.what());
  }
  WebConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) return bad("the top level must be a mapping");
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    if (key == "basic_auth_users") {
      if (kv.second.IsNull()) continue;
      if (!kv.second.IsMap()) return bad("basic_auth_users must map user names to bcrypt hashes");
      for (const auto& u : kv.second) {
        std::string user = u.first.Scalar();
        if (!u.second.IsScalar()) return bad("basic_auth_users." + user + ": want a bcrypt hash");
        std::string hash = u.second.Scalar();
        if (!(hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$")) ||
            hash.size() != 60) {
          return bad("basic_auth_users." + user + ": not a bcrypt hash ($2y$..., 60 characters)");
        }
        if (user.empty() || user.find(':') != std::string::npos)
          return bad("basic_auth_users: a user name must be non-empty and have no ':'");
        c.basicAuthUsers[user] = hash;
      }
    } else if (key == "tls_server_config") {
      if (kv.second.IsNull()) continue;
      auto t = parseTls(kv.second);
      if (!t) return t.error();
      c.tls = std::move(*t);
    } else if (key == "http_server_config") {
      if (kv.second.IsNull()) continue;
      if (auto st = parseHttpServer(kv.second, c); !st) return st.error();
    } else if (key == "rate_limit") {
      if (kv.second.IsNull()) continue;
      if (auto st = parseRateLimit(kv.second, c); !st) return st.error();
    } else {
      return bad(unknownKey(key));
    }
  }
  return c;
}

Result<WebConfig> loadWebConfig(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text) return text.error();
  auto c = parseWebConfig(*text);
  if (!c) return makeError(EINVAL, path, c.error().detail);
  if (c->tls) resolveAgainst(path, *c->tls);
  return c;
}

bool verifyPassword(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = ::crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*') return false;
  return constantTimeEquals(out, hash);
}

bool WebAuth::FileStamp::operator==(const FileStamp& o) const {
  return path == o.path && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
         mtime.tv_nsec == o.mtime.tv_nsec;
}

std::vector<WebAuth::FileStamp> WebAuth::stamps() const {
  std::vector<std::string> files{path_};
  if (config_.tls) {
    for (auto& f : config_.tls->files()) files.push_back(f);
  }
  std::vector<FileStamp> out;
  for (auto& f : files) {
    FileStamp s;
    s.path = f;
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0) {
      s.mtime = st.st_mtim;
      s.ino = st.st_ino;
      s.size = st.st_size;
    }
    out.push_back(std::move(s));
  }
  return out;
}

WebAuth::WebAuth(std::string path) : path_(std::move(path)) {
  auto c = loadWebConfig(path_);
  if (!c) throw std::invalid_argument("--web.config.file: " + c.error().message());
  if (c->tls) {
    auto t = makeTlsContext(*c->tls);
    if (!t) throw std::invalid_argument("--web.config.file: " + t.error().message());
    tls_ = std::move(*t);
  }
  apply(std::move(*c));
  stamps_ = stamps();
  lastCheckMs_ = nowMs();
}

void WebAuth::apply(WebConfig c) {
  config_ = std::move(c);
  headerLines_.clear();
  for (const auto& [name, value] : config_.headers) headerLines_ += name + ": " + value + "\r\n";
  for (const auto& key : config_.ignored) {
    if (std::find(loggedIgnored_.begin(), loggedIgnored_.end(), key) != loggedIgnored_.end())
      continue;
    loggedIgnored_.push_back(key);
    log::info("web config key accepted but not acted on",
              "key=" + key + (key == "http_server_config.http2"
                                  ? " reason=\"HTTP/2 is not served; clients use HTTP/1.1\""
                                  : ""));
  }
}

bool RateLimiter::admit(const RateLimit& limit, int64_t now) {
  std::lock_guard<std::mutex> g(mu_);
  if (!(limit == limit_)) {  // a new limit (or the first): a full bucket
    limit_ = limit;
    tokens_ = static_cast<double>(limit.burst);
    lastMs_ = now;
  }
  if (limit_.intervalMs <= 0) return true;
  if (now > lastMs_) {
    tokens_ = std::min(static_cast<double>(limit_.burst),
                       tokens_ + static_cast<double>(now - lastMs_) /
                                     static_cast<double>(limit_.intervalMs));
    lastMs_ = now;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool WebAuth::admit() {
  RateLimit limit;
  {
    std::lock_guard<std::mutex> g(mu_);
    maybeReload();
    limit = config_.rateLimit;
  }
  return limiter_.admit(limit, nowMs());
}

std::string WebAuth::responseHeaders() {
  std::lock_guard<std::mutex> g(mu_);
  return headerLines_;
}

void WebAuth::maybeReload() {
  int64_t now = nowMs();
  if (now - lastCheckMs_ < 1000) return;
  lastCheckMs_ = now;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return;  // gone for a moment: keep the old one
  auto current = stamps();
  if (current == stamps_) return;
  stamps_ = std::move(current);
  auto c = loadWebConfig(path_);
  TlsContext tls;
  if (c && c->tls.has_value() != static_cast<bool>(tls_)) {
    c = makeError(EINVAL, path_,
                  tls_ ? "tls_server_config removed: restart to serve plain HTTP"
                       : "tls_server_config added: restart to serve TLS");
  } else if (c && c->tls) {
    auto t = makeTlsContext(*c->tls);
    if (t) {
      tls = std::move(*t);
    } else {
      c = t.error();
    }
  }
  if (!c) {
    log::error("web config not reloaded, keeping the previous one",
               "err=" + log::quote(c.error().message()));
    return;
  }
  apply(std::move(*c));
  stamps_ = stamps();  // the new version may name other files
  if (tls) tls_ = std::move(tls);
  cache_.clear();
  log::info("web config reloaded",
            "file=" + log::quote(path_) + " users=" + std::to_string(config_.basicAuthUsers.size()) +
                " tls=" + (tls_ ? "true" : "false"));
}

TlsContext WebAuth::tlsContext() {
  std::lock_guard<std::mutex> g(mu_);
  maybeReload();
  return tls_;
}

bool WebAuth::allowed(const http::Request& req) {
  std::string hash;
  std::string user, password;
  {
    std::lock_guard<std::mutex> g(mu_);
    maybeReload();
    if (config_.basicAuthUsers.empty()) return true;
    std::string h = req.header("Authorization");
    if (!h.starts_with("Basic ")) return false;
    bool ok = false;
    std::string plain = base64Decode(std::string_view(h).substr(6), ok);
    size_t colon = plain.find(':');
    if (!ok || colon == std::string::npos) return false;
    user = plain.substr(0, colon);
    password = plain.substr(colon + 1);
    auto it = config_.basicAuthUsers.find(user);
    hash = it == config_.basicAuthUsers.end() ? std::string() : it->second;
    if (!hash.empty()) {
      auto c = cache_.find(hash + '\0' + user + '\0' + password);
      if (c != cache_.end()) return c->second;
    }
  }
  // bcrypt outside the lock: tens of ms.
  bool good = verifyPassword(password, hash.empty() ? kDummyHash : hash) && !hash.empty();
  std::lock_guard<std::mutex> g(mu_);
  if (!hash.empty()) {
    if (cache_.size() >= 1024) cache_.clear();
    cache_[hash + '\0' + user + '\0' + password] = good;
  }
  return good;
}

}  // namespace memcg

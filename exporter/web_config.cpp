#include "exporter/web_config.h"

#include <crypt.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "common/constant_time.h"
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

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Error bad(const std::string& why) { return makeError(EINVAL, "", why); }

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
      return bad("tls_server_config is not supported: this exporter does not serve TLS yet "
                 "(put a TLS proxy in front)");
    } else if (key == "http_server_config") {
      return bad("http_server_config is not supported");
    } else {
      return bad("unknown key " + key);
    }
  }
  return c;
}

Result<WebConfig> loadWebConfig(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text) return text.error();
  auto c = parseWebConfig(*text);
  if (!c) return makeError(EINVAL, path, c.error().detail);
  return c;
}

bool verifyPassword(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = ::crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*') return false;
  return constantTimeEquals(out, hash);
}

WebAuth::WebAuth(std::string path) : path_(std::move(path)) {
  auto c = loadWebConfig(path_);
  if (!c) throw std::invalid_argument("--web.config.file: " + c.error().message());
  config_ = std::move(*c);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    mtime_ = st.st_mtim;
    ino_ = st.st_ino;
    size_ = st.st_size;
  }
  lastCheckMs_ = nowMs();
}

void WebAuth::maybeReload() {
  int64_t now = nowMs();
  if (now - lastCheckMs_ < 1000) return;
  lastCheckMs_ = now;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return;  // gone for a moment: keep the old one
  if (st.st_ino == ino_ && st.st_size == size_ && st.st_mtim.tv_sec == mtime_.tv_sec &&
      st.st_mtim.tv_nsec == mtime_.tv_nsec)
    return;
  mtime_ = st.st_mtim;
  ino_ = st.st_ino;
  size_ = st.st_size;
  auto c = loadWebConfig(path_);
  if (!c) {
    log::error("web config not reloaded, keeping the previous one",
               "err=" + log::quote(c.error().message()));
    return;
  }
  config_ = std::move(*c);
  cache_.clear();
  log::info("web config reloaded",
            "file=" + log::quote(path_) + " users=" + std::to_string(config_.basicAuthUsers.size()));
}

bool WebAuth::allowed(const http::Request& req) {
  std::string hash;
  std::string user, password;
  {
    std::lock_guard<std::mutex> g(mu_);
    maybeReload();
    if (config_.basicAuthUsers.empty()) return true;
    std::string h = req.header("Authorization");
    if (req.path.starts_with("/api/v1/controller/") && h.starts_with("Bearer ")) return true;
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

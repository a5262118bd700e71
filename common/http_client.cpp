#include "common/http_client.h"

#include <cctype>
#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>

#include "common/file.h"
#include "common/parse.h"

namespace memcg {
namespace {

void globalInit() {
  // libcurl's global state is set up once, before any handle, from whichever
  // thread asks first.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<std::string> readSecret(const std::string& path, const char* field) {
  auto s = readWholeFile(path);
  if (!s.ok())
    return makeError(s.error().err, path, std::string(field) + ": cannot read");
  // Like Prometheus: surrounding white space (a final newline) is not part of it.
  std::string v = *s;
  const size_t b = v.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::string();
  const size_t e = v.find_last_not_of(" \t\r\n");
  return v.substr(b, e - b + 1);
}

bool tlsError(CURLcode c) {
  switch (c) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
      return true;
    default:
      return false;
  }
}

int errnoOf(CURLcode c) {
  if (tlsError(c)) return EPROTO;
  switch (c) {
    case CURLE_OPERATION_TIMEDOUT:
      return ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
      return ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
      return EHOSTUNREACH;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return EPROTO;
    case CURLE_WRITE_ERROR:
      return EMSGSIZE;
    default:
      return EIO;
  }
}

struct Sink {
  std::string* out;
  size_t max;
  bool over = false;
};

size_t onBody(char* p, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  const size_t room = s->max > s->out->size() ? s->max - s->out->size() : 0;
  if (len > room) {
    s->out->append(p, room);
    s->over = true;
    return len;  // the rest is read and dropped; the caller decides
  }
  s->out->append(p, len);
  return len;
}

struct Slist {
  curl_slist* p = nullptr;
  ~Slist() { curl_slist_free_all(p); }
};

std::string hostPort(const std::string& host, const std::string& port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

}  // namespace

Status validateHttpClientConfig(const HttpClientConfig& c) {
  auto readable = [](const std::string& f, const char* field) -> Status {
    if (f.empty() || ::access(f.c_str(), R_OK) == 0) return Ok{};
    return makeError(errno, f, std::string(field) + ": not readable");
  };
  if (c.tls.certFile.empty() != c.tls.keyFile.empty())
    return makeError(EINVAL, "tls_config", "cert_file and key_file go together");
  const std::pair<const std::string*, const char*> files[] = {
      {&c.tls.caFile, "ca_file"},
      {&c.tls.certFile, "cert_file"},
      {&c.tls.keyFile, "key_file"},
      {&c.passwordFile, "password_file"},
      {&c.credentialsFile, "credentials_file"}};
  for (const auto& [f, n] : files)
    if (auto s = readable(*f, n); !s.ok()) return s;
  if (c.basicAuth && c.authorization)
    return makeError(EINVAL, "http_config", "basic_auth and authorization are exclusive");
  if (c.basicAuth && !c.password.empty() && !c.passwordFile.empty())
    return makeError(EINVAL, "basic_auth", "password and password_file are exclusive");
  if (c.authorization && !c.credentials.empty() && !c.credentialsFile.empty())
    return makeError(EINVAL, "authorization",
                     "credentials and credentials_file are exclusive");
  if (c.authorization && c.authType.find_first_of(" \r\n") != std::string::npos)
    return makeError(EINVAL, "authorization", "type has a space or a line break");
  if (c.authorization && c.authType == "Basic")
    return makeError(EINVAL, "authorization", "type Basic: use basic_auth");
  return Ok{};
}

Result<ClientUrl> parseClientUrl(std::string_view url) {
  ClientUrl u;
  u.text = std::string(url);
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    u.scheme = "http";
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    u.scheme = "https";
    rest = url.substr(8);
  } else {
    return makeError(EINVAL, u.text, "not an http:// or https:// URL");
  }
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  if (path.find_first_of("?# ") != std::string_view::npos)
    return makeError(EINVAL, u.text, "a query, fragment or space in the path");
  if (hostport.find('@') != std::string_view::npos)
    return makeError(EINVAL, u.text,
                     "credentials in the URL are not supported (use basic_auth)");
  std::string_view port;
  if (!hostport.empty() && hostport[0] == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return makeError(EINVAL, u.text, "unclosed '['");
    u.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return makeError(EINVAL, u.text, "junk after ']'");
      port = after.substr(1);
    }
  } else {
    const size_t colon = hostport.rfind(':');
    u.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (u.host.empty()) return makeError(EINVAL, u.text, "no host");
  if (u.host.find_first_of(" /\\\r\n") != std::string::npos)
    return makeError(EINVAL, u.text, "bad host");
  if (port.empty() && hostport.back() == ':')
    return makeError(EINVAL, u.text, "empty port");
  if (!port.empty()) {
    auto p = parseU64(port);
    if (!p || *p == 0 || *p > 65535) return makeError(EINVAL, u.text, "bad port");
    u.port = std::string(port);
  } else {
    u.port = u.scheme == "https" ? "443" : "80";
  }
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  u.path = p;
  return u;
}

HttpClient::HttpClient(HttpClientConfig config) : config_(std::move(config)) {
  globalInit();
}

std::string queryEscape(std::string_view s, bool spaceAsPlus) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ' && spaceAsPlus) {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<ClientReply> HttpClient::post(const ClientUrl& url, const std::string& path,
                                     std::string_view contentType, std::string_view body,
                                     int64_t timeoutMs, size_t maxBody) const {
  return perform(url, path, true, contentType, body, timeoutMs, maxBody, false);
}

Result<ClientReply> HttpClient::get(const ClientUrl& url, const std::string& path,
                                    int64_t timeoutMs, size_t maxBody) const {
  return perform(url, path, false, {}, {}, timeoutMs, maxBody, true);
}

Result<ClientReply> HttpClient::perform(const ClientUrl& url, const std::string& path,
                                        bool isPost, std::string_view contentType,
                                        std::string_view body, int64_t timeoutMs,
                                        size_t maxBody, bool bodyLimitIsError) const {
  const auto& c = config_;
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) return makeError(ENOMEM, url.text, "curl_easy_init");
  CURL* e = h.get();
  // With server_name the request goes to the URL's address but TLS (SNI and
  // the certificate check) sees server_name; the Host header stays the URL's.
  const bool rename = url.scheme == "https" && !c.tls.serverName.empty();
  const std::string reqHost = rename ? c.tls.serverName : url.host;
  const std::string full = url.scheme + "://" + hostPort(reqHost, url.port) + path;
  curl_easy_setopt(e, CURLOPT_URL, full.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeoutMs));
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "memcg_exporter");
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);

  Slist headers, connectTo;
  auto addHeader = [&](const std::string& v) {
    headers.p = curl_slist_append(headers.p, v.c_str());
  };
  if (rename) {
    const std::string v6 =
        url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
    connectTo.p = curl_slist_append(
        nullptr, (c.tls.serverName + ":" + url.port + ":" + v6 + ":" + url.port).c_str());
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, connectTo.p);
    addHeader("Host: " + hostPort(url.host, url.port));
  }
  if (url.scheme == "https") {
    if (!c.tls.caFile.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, c.tls.caFile.c_str());
    if (!c.tls.certFile.empty()) {
      curl_easy_setopt(e, CURLOPT_SSLCERT, c.tls.certFile.c_str());
      curl_easy_setopt(e, CURLOPT_SSLKEY, c.tls.keyFile.c_str());
    }
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c.tls.insecureSkipVerify ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c.tls.insecureSkipVerify ? 0L : 2L);
  }
  std::string password = c.password;
  if (c.basicAuth) {
    if (!c.passwordFile.empty()) {
      auto p = readSecret(c.passwordFile, "password_file");
      if (!p.ok()) return p.error();
      password = *p;
    }
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERNAME, c.username.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, password.c_str());
  } else if (c.authorization) {
    std::string cred = c.credentials;
    if (!c.credentialsFile.empty()) {
      auto p = readSecret(c.credentialsFile, "credentials_file");
      if (!p.ok()) return p.error();
      cred = *p;
    }
    if (cred.find_first_of("\r\n") != std::string::npos)
      return makeError(EINVAL, url.text, "authorization credentials have a line break");
    addHeader("Authorization: " + (c.authType.empty() ? "Bearer" : c.authType) + " " +
              cred);
  }
  if (isPost) {
    addHeader("Content-Type: " + std::string(contentType));
    addHeader("Expect:");  // no 100-continue round trip
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(body.size()));
  } else {
    addHeader("Accept: application/json");
  }
  if (headers.p) curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.p);

  ClientReply r;
  Sink sink{&r.body, maxBody};
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
  const CURLcode rc = curl_easy_perform(e);
  if (rc != CURLE_OK) {
    std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (tlsError(rc)) detail = "TLS: " + detail;
    return makeError(errnoOf(rc), url.text, detail);
  }
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  if (r.status < 100 || r.status > 999)
    return makeError(EPROTO, url.text, "not an HTTP reply");
  if (sink.over && bodyLimitIsError)
    return makeError(EMSGSIZE, url.text,
                     "reply body larger than " + std::to_string(maxBody) + " bytes");
  return r;
}

}  // namespace memcg

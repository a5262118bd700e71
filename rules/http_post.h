// A minimal HTTP/1.1 client for the notifier: one POST per connection
// (Connection: close) to an http:// URL, with one deadline over resolve,
// connect, write and read. https is refused when the URL is parsed (the
// notifier is for a node's own Alertmanager, usually on loopback or a
// trusted network). Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg::rules {

struct HttpUrl {
  std::string host;  ///< a name, an IPv4 address or an IPv6 address without brackets
  std::string port;  ///< "80" when the URL names none
  std::string path;  ///< starts with '/'; no trailing '/' unless it is "/"
  std::string text;  ///< the URL as given (labels, logs)
};

/// Parses "http://host[:port][/path]". Errors say what is wrong.
Result<HttpUrl> parseHttpUrl(std::string_view url);

struct HttpReply {
  int status = 0;
  std::string body;  ///< at most the first 4 KiB (for error messages)
};

/// POSTs `body` to url.host:url.port at `path`. Errors: ETIMEDOUT past the
/// deadline, the errno of a failed connect/write/read, EPROTO for a reply
/// that is not HTTP.
Result<HttpReply> httpPost(const HttpUrl& url, const std::string& path,
                           std::string_view contentType, std::string_view body,
                           int64_t timeoutMs);

}  // namespace memcg::rules

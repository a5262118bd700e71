#include "web/ui.h"

#include "common/version.h"

namespace memcg::web {
namespace {

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void fill(std::string& t, std::string_view key, std::string_view value) {
  const std::string k = "{{" + std::string(key) + "}}";
  for (size_t pos = t.find(k); pos != std::string::npos;
       pos = t.find(k, pos + value.size())) {
    t.replace(pos, k.size(), value);
  }
}

}  // namespace

std::string renderIndex(std::string_view telemetryPath,
                        const std::vector<std::string>& collectors) {
  std::string list;
  for (const auto& n : collectors) list += "<li>" + escape(n) + "</li>";
  std::string t(kIndexHtml);
  fill(t, "version", escape(kVersion));
  fill(t, "revision", escape(kRevision));
  fill(t, "telemetry_path", escape(telemetryPath));
  fill(t, "collectors", list);
  return t;
}

void registerRoutes(http::Routes& routes, std::string indexHtml) {
  routes.add({"GET", "/",
              [page = std::move(indexHtml)](const http::Request&, http::Response& r) {
                r.status = 200;
                r.contentType = "text/html; charset=utf-8";
                r.body = page;
              }});
  const std::pair<const char*, std::pair<std::string_view, const char*>> assets[] = {
      {"/live.js", {kLiveJs, "text/javascript; charset=utf-8"}},
      {"/live.css", {kLiveCss, "text/css; charset=utf-8"}},
  };
  for (const auto& [path, asset] : assets) {
    routes.add({"GET", path, [body = asset.first, type = asset.second](const http::Request&,
                                                                       http::Response& r) {
                  r.status = 200;
                  r.contentType = type;
                  r.compressible = true;
                  r.body = std::string(body);
                }});
  }
}

}  // namespace memcg::web

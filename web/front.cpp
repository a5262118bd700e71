#include "web/front.h"

#include <atomic>
#include <stdexcept>

#include "collectors/scraper.h"
#include "common/log.h"
#include "common/version.h"
#include "history/history.h"
#include "metrics/registry.h"
#include "metrics/text_format.h"
#include "web/api/v1/controller.h"
#include "web/api/v1/exporter.h"
#include "web/api/v1/history.h"
#include "web/api/v1/rules.h"
#include "web/auth.h"
#include "web/http_server.h"
#include "web/routes.h"
#include "web/ui.h"
#include "web/web_config.h"

namespace memcg::web {

struct Front::Impl {
  FrontOptions opts;
  FrontParts parts;
  http::Routes routes;
  std::unique_ptr<controller::ControllerApi> controllerApi;
  std::unique_ptr<history::QueryApi> queryApi;
  std::unique_ptr<rules::RulesApi> rulesApi;
  std::unique_ptr<WebAuth> webAuth;  ///< --web.config.file; before the server
  std::unique_ptr<AuthPolicy> auth;  ///< the routes' policy (web config + bearer token)
  std::unique_ptr<HttpServer> server;
  /// `server` for the registry's readers (the sampler may collect while serve() starts it).
  std::atomic<HttpServer*> liveServer{nullptr};

  Impl(FrontOptions o, FrontParts p) : opts(std::move(o)), parts(p) {}
};

Front::Front(FrontOptions opts, FrontParts parts)
    : impl_(std::make_unique<Impl>(std::move(opts), parts)) {
  Impl& I = *impl_;
  I.controllerApi = std::make_unique<controller::ControllerApi>(parts.controller);
  if (parts.history) {
    // The live view's series (its PromQL runs over the history).
    for (auto sel : kLiveViewSeries) {
      if (auto id = parts.history->select(sel); !id.ok())
        throw std::logic_error("live view selector: " + id.error().message());
    }
    history::ApiOptions ao;
    ao.timeoutMs = I.opts.queryTimeoutMs;
    ao.maxSamples = I.opts.queryMaxSamples;
    ao.version = kVersion;
    ao.revision = kRevision;
    metrics::Registry* reg = &parts.metrics;
    ao.describe = [reg] { return reg->describe(); };
    I.queryApi = std::make_unique<history::QueryApi>(*parts.history, std::move(ao));
    history::QueryApi* qp = I.queryApi.get();
    parts.metrics.add("query_api", std::make_unique<metrics::FunctionCollectable>(
                                       [qp](metrics::Sink& s) { qp->collectMetrics(s); },
                                       [] { return history::QueryApi::describeMetrics(); }));
  }
  if (parts.rules && parts.actions)
    I.rulesApi = std::make_unique<rules::RulesApi>(*parts.rules, *parts.actions);

  if (I.opts.exporterMetrics) {
    // The server is made in serve(); until then it has nothing to count.
    Impl* impl = impl_.get();
    parts.metrics.add("http", std::make_unique<metrics::FunctionCollectable>(
                                  [impl](metrics::Sink& s) {
                                    if (auto* srv = impl->liveServer.load()) srv->collect(s);
                                  },
                                  [] { return describeServerMetrics(); }));
  }

  // The route table: one row per endpoint, each handler thin.
  metrics::Registry& reg = parts.metrics;
  I.routes.add({"GET", I.opts.telemetryPath, [&reg](const http::Request&, http::Response& r) {
                  r.body.clear();
                  metrics::Sink sink;
                  auto keep = reg.collect(sink);
                  metrics::writeText(sink.families(), r.body);
                  r.contentType = "text/plain; version=0.0.4; charset=utf-8";
                  r.compressible = true;
                }});
  I.routes.add({"GET", "/-/healthy", [](const http::Request&, http::Response& r) {
                  r = http::Response{200, "Healthy\n", "text/plain; charset=utf-8"};
                }});
  Scraper& scraper = parts.scraper;
  I.routes.add({"GET", "/-/ready", [&scraper](const http::Request&, http::Response& r) {
                  r = scraper.ready()
                          ? http::Response{200, "Ready\n", "text/plain; charset=utf-8"}
                          : http::Response{503, "Not ready\n", "text/plain; charset=utf-8"};
                }});
  api::ApiParts ap{scraper, parts.locks, parts.report, parts.taskstats};
  ap.registry = &parts.metrics;
  api::registerRoutes(I.routes, std::move(ap));
  I.controllerApi->registerRoutes(I.routes);
  if (I.queryApi) I.queryApi->registerRoutes(I.routes);
  if (I.rulesApi) I.rulesApi->registerRoutes(I.routes);
  registerRoutes(I.routes, renderIndex(I.opts.telemetryPath, I.opts.enabledCollectors));

  if (!I.opts.webConfigFile.empty()) I.webAuth = std::make_unique<WebAuth>(I.opts.webConfigFile);
  I.auth = std::make_unique<AuthPolicy>(
      I.webAuth.get(), I.opts.controllerTokenFile.empty()
                           ? std::string()
                           : AuthPolicy::readTokenFile(I.opts.controllerTokenFile));
  I.routes.setAuth(I.auth.get());
}

Front::~Front() {
  impl_->liveServer.store(nullptr);
  impl_->server.reset();
}

void Front::serve() {
  Impl& I = *impl_;
  HttpServerOptions web;
  web.listenAddress = I.opts.listenAddress;
  web.threads = I.opts.threads;
  web.gzipLevel = I.opts.gzipLevel;
  web.readTimeoutMs = I.opts.readTimeoutMs;
  web.handshakeTimeoutMs = web.readTimeoutMs;
  web.maxConnections = I.opts.maxConnections;
  if (I.webAuth) {
    web.responseHeaders = [auth = I.webAuth.get()] { return auth->responseHeaders(); };
    if (I.webAuth->tlsContext())
      web.tlsContext = [auth = I.webAuth.get()] { return auth->tlsContext(); };
  }
  I.server = std::make_unique<HttpServer>(web, I.routes);
  I.liveServer.store(I.server.get());
  log::info("listening", "address=" + I.opts.listenAddress +
                             std::string(" tls=") + (web.tlsContext ? "true" : "false") +
                             " port=" + std::to_string(I.server->port()) +
                             " telemetry_path=" + I.opts.telemetryPath);
}

std::vector<const metrics::Desc*> Front::describeServerMetrics() {
  return HttpServer::describe();
}

const http::Routes& Front::routes() const { return impl_->routes; }

int Front::port() const { return impl_->server ? impl_->server->port() : 0; }

}  // namespace memcg::web

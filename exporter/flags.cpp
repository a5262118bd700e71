#include "exporter/flags.h"

#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common/duration.h"
#include "common/log.h"
#include "common/parse.h"
#include "controller/options.h"
#include "web/web_config.h"

namespace memcg {

/// The exporter's own flags (web, log, the collector switches' default, and
/// --version / --help), then every part's, composed in --help order.
FlagList flagTable(Options& o) {
  FlagList f = {
      {"web.listen-address", "Address to listen on for the web interface and telemetry.", false,
       [&o](const std::string& v) { o.listenAddress = v; }, ":9712"},
      {"web.telemetry-path", "Path under which to expose metrics.", false,
       [&o](const std::string& v) {
         if (v.empty() || v[0] != '/' || v == "/") {
           throw std::invalid_argument("--web.telemetry-path must start with '/' and not be '/'");
         }
         o.telemetryPath = v;
       },
       "/metrics"},
      {"web.gzip-level", "zlib level for gzip-encoded scrapes (1 fastest .. 9 smallest).", false,
       [&o](const std::string& v) { o.gzipLevel = parseFlagInt("web.gzip-level", v, 1, 9); },
       "1"},
      {"web.threads", "HTTP worker threads.", false,
       [&o](const std::string& v) { o.webThreads = parseFlagInt("web.threads", v, 1, 64); },
       "4"},
      {"web.read-timeout",
       "How long a client has to send a request's head, and again its body (then 408).",
       false,
       [&o, logged = std::make_shared<bool>(false)](const std::string& v) {
         // A bare number is the old spelling, in seconds: still accepted, logged once.
         if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
           o.webReadTimeoutMs = int64_t{parseFlagInt("web.read-timeout", v, 1, 600)} * 1000;
           if (!*logged) {
             *logged = true;
             log::warn("deprecated flag value", "flag=--web.read-timeout value=" + v +
                                                     " use=--web.read-timeout=" + v + "s");
           }
           return;
         }
         o.webReadTimeoutMs = durationFlag("web.read-timeout", v, 1000, 600000);
       },
       "10s"},
      {"web.max-connections",
       "Open HTTP connections at most; more are answered 503 and closed.", false,
       [&o](const std::string& v) {
         o.webMaxConnections = parseFlagInt("web.max-connections", v, 16, 65536);
       },
       "4096"},
      {"web.config.file",
       "Web configuration file (exporter-toolkit format): tls_server_config, "
       "http_server_config, basic_auth_users with bcrypt hashes, rate_limit.",
       false,
       [&o](const std::string& v) {
         auto c = loadWebConfig(v);
         if (!c) throw std::invalid_argument("--web.config.file: " + c.error().message());
         if (c->tls) {  // the certificate and key load and match
           if (auto t = makeTlsContext(*c->tls); !t)
             throw std::invalid_argument("--web.config.file: " + t.error().message());
         }
         o.webConfigFile = v;
       },
       ""},
  };
  auto append = [&f](FlagList more) {
    for (auto& x : more) f.push_back(std::move(x));
  };
  append(discoveryFlags(o.discovery));
  append(collectorFlags(o.collectors));
  f.push_back(switchFlag("collector.disable-defaults",
                         "Disable all collectors not enabled explicitly.", o.disableDefaults));
  append(controller::controllerFlags(o.controller));
  append(history::historyFlags(o.history));
  append(rules::rulesFlags(o.rules));
  f.push_back({"log.level",
               "Only log messages with the given severity or above: debug, info, warn, error.",
               false,
               [&o](const std::string& v) {
                 log::Level l;
                 if (!log::parseLevel(v, l)) {
                   throw std::invalid_argument(
                       "--log.level must be debug, info, warn or error, got \"" + v + "\"");
                 }
                 o.logLevel = v;
               },
               "info"});
  f.push_back({"log.format", "Output format of log messages: logfmt or json.", false,
               [&o](const std::string& v) {
                 log::Format fmt;
                 if (!log::parseFormat(v, fmt)) {
                   throw std::invalid_argument("--log.format must be logfmt or json, got \"" +
                                               v + "\"");
                 }
                 o.logFormat = v;
               },
               "logfmt"});
  f.push_back(switchFlag("web.disable-exporter-metrics",
                         "Exclude the exporter's own metrics about itself (process_*, the HTTP "
                         "server's memcg_exporter_http_*, capabilities) from /metrics.",
                         o.disableExporterMetrics));
  f.push_back(switchFlag("capabilities.drop",
                         "After start-up keep only the capabilities the enabled collectors and "
                         "the controller use (docs/configuration.md, \"Privileges\").",
                         o.dropCapabilities));
  f.push_back(switchFlag("version", "Show the version and exit.", o.showVersion));
  f.push_back(switchFlag("help", "Show this help and exit.", o.showHelp));
  f.push_back({"help-format",
               "Print a reference generated from the flag and metric tables and exit: markdown "
               "(the flag reference), man (the manual page) or metrics (the metric reference). "
               "scripts/gen-docs.sh writes them to docs/.",
               false,
               [&o](const std::string& v) {
                 if (v != "markdown" && v != "man" && v != "metrics")
                   throw std::invalid_argument("--help-format must be markdown, man or metrics");
                 o.helpFormat = v;
               },
               ""});
  return f;
}

namespace {

const CollectorInfo* findCollector(std::string_view name) {
  for (const auto& c : collectorRegistry()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> Options::enabledCollectors() const {
  std::vector<std::string> out;
  for (const auto& c : collectorRegistry()) {
    bool on = !disableDefaults && c.defaultEnabled;
    auto it = collectorSwitch.find(std::string(c.name));
    if (it != collectorSwitch.end()) on = it->second;
    if (on) out.emplace_back(c.name);
  }
  return out;
}

Options parseFlags(int argc, const char* const* argv) {
  Options o;
  const FlagList table = flagTable(o);  // bound to o
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) {
      throw std::invalid_argument("unexpected argument \"" + arg + "\", try --help");
    }
    std::string body = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    bool negated = false;
    if (body.rfind("no-", 0) == 0) {
      negated = true;
      body = body.substr(3);
    }
    // --collector.NAME / --no-collector.NAME
    if (body.rfind("collector.", 0) == 0 && findCollector(body.substr(10))) {
      if (value) throw std::invalid_argument("--" + body + " takes no value");
      o.collectorSwitch[body.substr(10)] = !negated;
      continue;
    }
    const FlagSpec* f = nullptr;
    for (const auto& fl : table) {
      if (fl.name == body) f = &fl;
    }
    if (!f) throw std::invalid_argument("unknown flag --" + body + ", try --help");
    if (f->isBool) {
      if (value && *value != "true" && *value != "false") {
        throw std::invalid_argument("--" + body + " wants true or false");
      }
      bool on = value ? *value == "true" : true;
      f->set((on != negated) ? "true" : "false");
      continue;
    }
    if (negated) throw std::invalid_argument("--no-" + body + " is not a switch");
    if (!value) {
      if (i + 1 >= argc) throw std::invalid_argument("--" + body + " needs a value");
      value = argv[++i];
    }
    f->set(*value);
  }
  listenSpec(o.listenAddress);  // validate early
  return o;
}

std::string usage() {
  std::ostringstream s;
  s << "usage: memcg_exporter [<flags>]\n\n"
       "Prometheus exporter for Linux memory cgroups (memcg) and their reclaim.\n\nFlags:\n";
  Options defaults;
  for (const auto& f : flagTable(defaults)) {
    s << "  --" << f.name << (f.isBool ? "" : "=VALUE") << "\n      " << f.help;
    if (!f.isBool && !f.defaultText.empty()) s << " (default: " << f.defaultText << ")";
    s << "\n";
  }
  s << "\nCollectors (--collector.NAME enables, --no-collector.NAME disables):\n";
  for (const auto& c : collectorRegistry()) {
    s << "  " << c.name << (c.defaultEnabled ? " [default on]" : " [default off]") << "\n      "
      << c.help << "\n";
  }
  return s.str();
}

std::string listenSpec(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("--web.listen-address must be [host]:port, got \"" + addr + "\"");
  }
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  auto p = parseU64(port);
  if (!p || *p > 65535) {
    throw std::invalid_argument("--web.listen-address has a bad port: \"" + addr + "\"");
  }
  if (host.empty()) return port;
  // The server (http_server.h) binds IPv6 itself.
  if (host.front() == '[' && host.back() == ']') return host + ":" + port;
  if (host.find(':') != std::string::npos) {
    throw std::invalid_argument("--web.listen-address: write IPv6 hosts in brackets, e.g. [::1]:9712");
  }
  return host + ":" + port;
}

}  // namespace memcg

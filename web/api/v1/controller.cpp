#include "web/api/v1/controller.h"

#include <stdexcept>

#include "common/log.h"

namespace memcg::controller {
namespace {

/// A non-negative integer field; false with `why` set when present but bad.
bool uintField(const nlohmann::json& j, const char* name, bool required, uint64_t& out,
               std::string& why) {
  if (!j.contains(name)) {
    if (required) why = std::string("missing field ") + name;
    return !required;
  }
  const auto& v = j[name];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    why = std::string(name) + " must be a non-negative integer (bytes)";
    return false;
  }
  out = v.get<uint64_t>();
  return true;
}

/// A percent field: a JSON number above 0 and below 100 (fractions allowed).
bool percentField(const nlohmann::json& j, const char* name, double& out, std::string& why) {
  if (!j.contains(name)) return true;
  const auto& v = j[name];
  if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 100)) {
    why = std::string(name) + " must be a number above 0 and below 100 (percent of the limit)";
    return false;
  }
  out = v.get<double>();
  return true;
}

/// One margin, given as <what>_margin_bytes or <what>_margin_percent (exactly one).
bool marginField(const nlohmann::json& j, const std::string& what, uint64_t& bytes,
                 double& percent, std::string& why) {
  const std::string b = what + "_margin_bytes", p = what + "_margin_percent";
  const bool hasB = j.contains(b), hasP = j.contains(p);
  if (hasB && hasP) {
    why = "give " + b + " or " + p + ", not both";
    return false;
  }
  if (!hasB && !hasP) {
    why = "missing field " + b + " (or " + p + ")";
    return false;
  }
  return hasB ? uintField(j, b.c_str(), true, bytes, why) : percentField(j, p.c_str(), percent, why);
}

bool cgroupField(const nlohmann::json& j, std::string& out, std::string& why) {
  if (!j.contains("cgroup") || !j["cgroup"].is_string()) {
    why = "missing string field cgroup";
    return false;
  }
  out = j["cgroup"].get<std::string>();
  if (out.empty() || out.front() != '/' || out.size() > 4096 ||
      out.find('\0') != std::string::npos || out.find("/../") != std::string::npos ||
      (out.size() >= 3 && out.compare(out.size() - 3, 3, "/..") == 0)) {
    why = "cgroup must be a label like \"/a/b\"";
    return false;
  }
  return true;
}

std::optional<nlohmann::json> parseObject(const std::string& body, std::string& why) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    why = "body is not valid JSON";
    return std::nullopt;
  }
  if (!j.is_object()) {
    why = "body must be a JSON object";
    return std::nullopt;
  }
  return j;
}

}  // namespace

int statusFor(ErrorKind k) {
  switch (k) {
    case ErrorKind::kBadInput: return 400;
    case ErrorKind::kForbidden: return 403;
    case ErrorKind::kNotFound: return 404;
    case ErrorKind::kConflict: return 409;
    case ErrorKind::kDisabled: return 503;
    case ErrorKind::kInternal: return 500;
  }
  return 500;
}

ControllerApi::ControllerApi(Controller* controller) : controller_(controller) {}

template <typename Fn>
HttpResult ControllerApi::endpoint(const std::string* body, Fn&& fn) const {
  if (!controller_) return http::jsonError(503, "controller disabled (--controller.enable)");
  if (!body) return fn(nullptr);
  std::string why;
  auto j = parseObject(*body, why);
  if (!j) return http::jsonError(400, why);
  return fn(&*j);
}

HttpResult ControllerApi::handleProtect(const std::string& body) const {
  return endpoint(&body, [&](const nlohmann::json* j) {
    std::string why;
    Protection p;
    if (!cgroupField(*j, p.cgroup, why) ||
        !marginField(*j, "start", p.startMarginBytes, p.startMarginPercent, why) ||
        !marginField(*j, "target", p.targetMarginBytes, p.targetMarginPercent, why) ||
        !uintField(*j, "floor_bytes", false, p.floorBytes, why)) {
      return http::jsonError(400, why);
    }
    if (auto err = controller_->protect(p)) {
      return http::jsonError(statusFor(err->kind), err->message);
    }
    nlohmann::json ok = {{"status", "protected"},
                         {"cgroup", p.cgroup},
                         {"dry_run", controller_->options().dryRun}};
    // The form asked for; GET state shows the bytes a percent resolves to.
    if (p.startMarginPercent > 0) {
      ok["start_margin_percent"] = p.startMarginPercent;
    } else {
      ok["start_margin_bytes"] = p.startMarginBytes;
    }
    if (p.targetMarginPercent > 0) {
      ok["target_margin_percent"] = p.targetMarginPercent;
    } else {
      ok["target_margin_bytes"] = p.targetMarginBytes;
    }
    HttpResult r;
    http::replyJson(r, ok);
    return r;
  });
}

HttpResult ControllerApi::handleUnprotect(const std::string& body) const {
  return endpoint(&body, [&](const nlohmann::json* j) {
    std::string why, cgroup;
    if (!cgroupField(*j, cgroup, why)) return http::jsonError(400, why);
    if (auto err = controller_->unprotect(cgroup)) {
      return http::jsonError(statusFor(err->kind), err->message);
    }
    HttpResult r;
    http::replyJson(r, nlohmann::json{{"status", "unprotected"}, {"cgroup", cgroup}});
    return r;
  });
}

HttpResult ControllerApi::handleState() const {
  return endpoint(nullptr, [&](const nlohmann::json*) {
    HttpResult r;
    http::replyJson(r, controller_->state());
    return r;
  });
}

void ControllerApi::registerRoutes(http::Routes& routes) const {
  routes.add({"POST", "/api/v1/controller/protect",
              [this](const http::Request& q, http::Response& r) { r = handleProtect(q.body); },
              http::Access::kToken});
  routes.add({"POST", "/api/v1/controller/unprotect",
              [this](const http::Request& q, http::Response& r) { r = handleUnprotect(q.body); },
              http::Access::kToken});
  routes.add({"GET", "/api/v1/controller/state",
              [this](const http::Request&, http::Response& r) { r = handleState(); },
              http::Access::kTokenRead});
}

}  // namespace memcg::controller

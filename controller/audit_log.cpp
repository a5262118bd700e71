#include "controller/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "common/log.h"

namespace memcg::controller {
namespace {

std::string nowRfc3339() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  auto a = std::make_unique<AuditLog>();
  if (path.empty()) return a;
  a->fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!a->fd_.valid()) return makeError(errno, path, "cannot open the controller audit log");
  a->path_ = path;
  return a;
}

void AuditLog::write(std::string_view event, nlohmann::json fields) {
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = nowRfc3339();
  line["event"] = std::string(event);
  for (auto& [k, v] : fields.items()) line[k] = v;
  std::string s = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  log::info("controller audit", "entry=" + log::quote(s));
  std::lock_guard<std::mutex> g(mu_);
  if (!fd_.valid()) return;
  s += '\n';
  // One write() with O_APPEND: lines from concurrent writers never interleave.
  while (::write(fd_.get(), s.data(), s.size()) < 0 && errno == EINTR) {
  }
}

}  // namespace memcg::controller

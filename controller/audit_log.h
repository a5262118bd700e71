// The controller's audit log: one JSON object per line for everything it did
// or, in dry-run, would have done (protect, unprotect, nudge, reclaim,
// journal restore, conflict, error). Appended with O_APPEND, not synced (the
// journal is the crash-safety record; this is the human one). Every line is
// also logged at info level.
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fd.h"
#include "common/result.h"

namespace memcg::controller {

class AuditLog {
 public:
  AuditLog() = default;  ///< disabled: log lines only
  /// Opens `path` for appending (created 0600). Empty path = disabled.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path);

  /// Adds "ts" (RFC 3339, UTC, ms) and "event" and writes one line.
  void write(std::string_view event, nlohmann::json fields);

 private:
  std::mutex mu_;
  Fd fd_;
  std::string path_;
};

}  // namespace memcg::controller

// Loads the tracepoint formats the pipeline needs into a libtraceevent handle.
//
// Kernel interface: <root>/events/header_page (ring-buffer page header) and
// <root>/events/<system>/<event>/format for each event of events.h. `root` is
// a mounted tracefs (e.g. /sys/kernel/tracing) or a copy of one (the committed
// tests/fixtures/tracefs), so decoders are testable without root.
// Only the needed ~13 formats are parsed (a few ms) instead of all events
// (~170 ms with tracefs_local_events on 6.18).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "tracing/events.h"

struct tep_handle;

namespace memcg::tracing {

class EventFormats {
 public:
  /// Parses header_page and every known event's format under `root`. Events
  /// whose format file is absent are skipped (listed in missing()); a missing
  /// header_page or a format that does not parse is an error.
  static Result<EventFormats> load(const std::string& root);

  tep_handle* tep() const { return tep_.get(); }
  const std::vector<EventType>& available() const { return available_; }
  const std::vector<EventType>& missing() const { return missing_; }
  bool has(EventType t) const;
  /// The kernel's name of an available event (EventName::name, or alt_name
  /// when only the older name exists); EventName::name if not available.
  const char* nameOf(EventType t) const;

 private:
  struct TepFree {
    void operator()(tep_handle* t) const;
  };
  std::unique_ptr<tep_handle, TepFree> tep_;
  std::vector<EventType> available_;
  std::vector<EventType> missing_;
  std::vector<std::pair<EventType, const char*>> names_;
};

}  // namespace memcg::tracing

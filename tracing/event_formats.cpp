#include "tracing/event_formats.h"

#include <event-parse.h>

#include <algorithm>
#include <cerrno>

#include "common/file.h"

namespace memcg::tracing {

void EventFormats::TepFree::operator()(tep_handle* t) const { tep_free(t); }

bool EventFormats::has(EventType t) const {
  return std::find(available_.begin(), available_.end(), t) != available_.end();
}

const char* EventFormats::nameOf(EventType t) const {
  for (const auto& [type, name] : names_) {
    if (type == t) return name;
  }
  const EventName* en = eventName(t);
  return en ? en->name : "";
}

Result<EventFormats> EventFormats::load(const std::string& root) {
  EventFormats f;
  f.tep_.reset(tep_alloc());
  if (!f.tep_) return makeError(ENOMEM, root, "tep_alloc");

  const std::string header = root + "/events/header_page";
  auto hp = readWholeFile(header);
  if (!hp.ok()) return hp.error();
  // The kernel's long size is that of the running (or recorded) kernel; we
  // only support native-endian, same-word-size tracefs.
  if (tep_parse_header_page(f.tep_.get(), hp->data(), hp->size(),
                            static_cast<int>(sizeof(long))) != 0) {
    return makeError(EINVAL, header, "tep_parse_header_page failed");
  }
  tep_set_long_size(f.tep_.get(), static_cast<int>(sizeof(long)));
  tep_set_file_bigendian(f.tep_.get(), tep_is_local_bigendian(f.tep_.get())
                                           ? TEP_BIG_ENDIAN
                                           : TEP_LITTLE_ENDIAN);

  for (const auto& e : kEventNames) {
    const char* name = e.name;
    std::string path = root + "/events/" + e.system + "/" + name + "/format";
    auto text = readWholeFile(path);
    if (!text.ok() && text.error().err == ENOENT && e.alt_name) {
      // An older kernel's name for the same event (e.g. 6.1's mm_vmscan_writepage).
      name = e.alt_name;
      path = root + "/events/" + e.system + "/" + name + "/format";
      text = readWholeFile(path);
    }
    if (!text.ok()) {
      if (text.error().err == ENOENT) {
        f.missing_.push_back(e.type);
        continue;
      }
      return text.error();
    }
    enum tep_errno rc =
        tep_parse_event(f.tep_.get(), text->data(), text->size(), e.system);
    if (rc != TEP_ERRNO__SUCCESS) {
      char msg[256];
      tep_strerror(f.tep_.get(), rc, msg, sizeof msg);
      return makeError(EINVAL, path, std::string("tep_parse_event: ") + msg);
    }
    // libtraceevent is lenient with garbage; insist on a usable result.
    tep_event* ev = tep_find_event_by_name(f.tep_.get(), e.system, name);
    if (!ev || ev->id <= 0 || !tep_find_common_field(ev, "common_pid")) {
      return makeError(EINVAL, path, "format did not parse into a usable event");
    }
    f.available_.push_back(e.type);
    f.names_.emplace_back(e.type, name);
  }
  return f;
}

}  // namespace memcg::tracing

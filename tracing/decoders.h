// Raw tracepoint record -> typed Event (events.h).
//
// Kernel interface: the binary layout of each event is read from its tracefs
// `format` file (offset/size per field), resolved ONCE per event at
// construction through libtraceevent's tep_format_field, never per record.
// A record is the payload a ring-buffer page holds for one event: the common
// header (common_type, common_flags, common_preempt_count, common_pid) then
// the event's fields. __data_loc strings (cgroup_attach_task dst_path) are
// u32 "len << 16 | offset" (offset relative to the field end for __rel_loc).
// Native endianness only.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "tracing/event_formats.h"
#include "tracing/events.h"

namespace memcg::tracing {

class Decoder {
 public:
  /// Resolves field handles for every event available in `formats`.
  /// Fails if the common header fields are missing; an event whose required
  /// fields are missing is dropped from supported() (logged at warn).
  static Result<Decoder> create(const EventFormats& formats);

  /// Decodes one record. Returns false (and leaves `out.type` kUnknown) for an
  /// event id we do not handle or a record too short for its format.
  bool decode(const void* data, uint32_t size, uint64_t ts, Event& out) const;

  /// Event types whose fields were all found.
  const std::vector<EventType>& supported() const { return supported_; }
  bool supports(EventType t) const;
  /// The kernel's event id for `t` (common_type), or -1.
  int eventId(EventType t) const;

  /// Where a field sits inside a record (exposed for tests and the bench,
  /// which synthesise records from the same layout).
  struct FieldRef {
    uint16_t offset = 0;
    uint8_t size = 0;
    bool present = false;
    bool relative = false;  // __rel_loc
  };
  enum FieldSlot : uint8_t {
    kOrder,
    kNid,
    kNrReclaimed,
    kNrScanned,
    kNrDirty,
    kNrWriteback,
    kReclaimFlags,
    kTargetPid,
    kDstRoot,
    kDstId,
    kDstPath,
    kNrTaken,
    kLru,
    kNrDeactivated,
    kDelayedUs,
    kReason,
    kFreed,
    kComm,
    // Lock contention probes (lock_stats.h).
    kLockAddr,
    kLockFlags,
    kLockRet,
    kCgId,
    kCgRoot,
    kContended,
    kNeedsFlush,
    kStackSize,
    kStackCallers,  // an array: only its offset is used
    kFieldCount
  };
  const FieldRef& field(EventType t, FieldSlot s) const;
  FieldRef commonType() const { return common_type_; }
  FieldRef commonPid() const { return common_pid_; }

 private:
  struct Format {
    EventType type = EventType::kUnknown;
    int id = -1;
    uint32_t min_size = 0;  // records shorter than this are malformed
    FieldRef fields[kFieldCount];
  };
  // LRU/writeback/slab detail events (kept out of decode()'s switch).
  static void decodeScan(const uint8_t* p, const FieldRef* fr, EventType t, Event& out);

  FieldRef common_type_;
  FieldRef common_pid_;
  uint32_t common_min_size_ = 0;
  std::vector<int8_t> by_id_;  // kernel event id -> index into formats_, -1 if unknown
  std::vector<Format> formats_;
  std::vector<EventType> supported_;
  static const FieldRef kAbsent;
};

}  // namespace memcg::tracing

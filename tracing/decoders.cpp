#include "tracing/decoders.h"

#include <event-parse.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/log.h"

namespace memcg::tracing {

const Decoder::FieldRef Decoder::kAbsent{};

namespace {

struct FieldSpec {
  Decoder::FieldSlot slot;
  const char* name;
  bool required;
};

// Which fields each event needs. Optional fields default to 0 when a kernel
// lacks them.
std::vector<FieldSpec> specFor(EventType t) {
  using D = Decoder;
  switch (t) {
    case EventType::kDirectReclaimBegin:
    case EventType::kMemcgReclaimBegin:
    case EventType::kSoftlimitReclaimBegin:
      return {{D::kOrder, "order", false}};
    case EventType::kDirectReclaimEnd:
    case EventType::kMemcgReclaimEnd:
    case EventType::kSoftlimitReclaimEnd:
      return {{D::kNrReclaimed, "nr_reclaimed", true}};
    case EventType::kKswapdWake:
    case EventType::kWakeupKswapd:
      return {{D::kNid, "nid", true}, {D::kOrder, "order", true}};
    case EventType::kKswapdSleep:
      return {{D::kNid, "nid", true}};
    case EventType::kLruShrinkInactive:
      return {{D::kNid, "nid", false},
              {D::kNrScanned, "nr_scanned", true},
              {D::kNrReclaimed, "nr_reclaimed", true},
              {D::kNrDirty, "nr_dirty", false},
              {D::kNrWriteback, "nr_writeback", false},
              {D::kReclaimFlags, "reclaim_flags", false}};
    case EventType::kLruIsolate:
      return {{D::kNrScanned, "nr_scanned", true},
              {D::kNrTaken, "nr_taken", true},
              {D::kLru, "lru", true}};
    case EventType::kLruShrinkActive:
      return {{D::kNid, "nid", false},
              {D::kNrTaken, "nr_taken", true},
              {D::kNrDeactivated, "nr_deactivated", true},
              {D::kReclaimFlags, "reclaim_flags", true}};
    case EventType::kWriteFolio:
      return {{D::kReclaimFlags, "reclaim_flags", true}};
    case EventType::kThrottled:
      return {{D::kNid, "nid", false},
              {D::kDelayedUs, "usec_delayed", true},
              {D::kReason, "reason", true}};
    case EventType::kShrinkSlabStart:
      return {{D::kNid, "nid", false}};
    case EventType::kShrinkSlabEnd:
      return {{D::kNid, "nid", false}, {D::kFreed, "retval", true}};
    case EventType::kReclaimPages:
      return {{D::kNid, "nid", false},
              {D::kNrScanned, "nr_scanned", true},
              {D::kNrReclaimed, "nr_reclaimed", true},
              {D::kNrDirty, "nr_dirty", false},
              {D::kNrWriteback, "nr_writeback", false}};
    case EventType::kCgroupRmdir:
      return {{D::kDstRoot, "root", true}, {D::kDstId, "id", false}, {D::kDstPath, "path", true}};
    case EventType::kCgroupAttach:
      return {{D::kDstRoot, "dst_root", true},
              {D::kDstId, "dst_id", false},
              {D::kTargetPid, "pid", true},
              {D::kDstPath, "dst_path", true}};
    case EventType::kProcessFork:
      return {{D::kTargetPid, "child_pid", true}};
    case EventType::kProcessExit:
      return {{D::kTargetPid, "pid", true}, {D::kComm, "comm", false}};
    case EventType::kRstatLockContended:
    case EventType::kRstatLocked:
    case EventType::kRstatUnlock:
      return {{D::kCgRoot, "root", true}, {D::kCgId, "id", true},
              {D::kContended, "contended", false}};
    case EventType::kMemcgFlushStats:
      return {{D::kCgId, "id", true}, {D::kNeedsFlush, "needs_flush", true}};
    case EventType::kLockContentionBegin:
      return {{D::kLockAddr, "lock_addr", true}, {D::kLockFlags, "flags", true}};
    case EventType::kLockContentionEnd:
      return {{D::kLockAddr, "lock_addr", true}, {D::kLockRet, "ret", false}};
    case EventType::kKernelStack:
      return {{D::kStackSize, "size", true}, {D::kStackCallers, "caller", true}};
    default:
      return {};
  }
}

bool toRef(const tep_format_field* f, Decoder::FieldRef& ref, bool array = false) {
  if (!f || f->offset < 0 || f->offset > 0xffff || f->size <= 0) return false;
  // Numbers up to 8 bytes; fixed char arrays (comm[16]) up to 255; `array`:
  // a variable-length array of which only the offset is used.
  const bool fixed_array =
      (f->flags & TEP_FIELD_IS_ARRAY) && !(f->flags & TEP_FIELD_IS_DYNAMIC) && f->size <= 0xff;
  if (!array && f->size > 8 && !fixed_array) return false;
  ref.offset = static_cast<uint16_t>(f->offset);
  // An array's nominal size (kernel_stack caller[8]) says nothing about a
  // record's real length: only its offset is used.
  ref.size = array ? 0 : static_cast<uint8_t>(f->size);
  ref.present = true;
  ref.relative = (f->flags & TEP_FIELD_IS_RELATIVE) != 0;
  return true;
}

inline uint64_t readU(const uint8_t* p, const Decoder::FieldRef& r) {
  switch (r.size) {
    case 1:
      return p[r.offset];
    case 2: {
      uint16_t v;
      std::memcpy(&v, p + r.offset, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p + r.offset, 4);
      return v;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p + r.offset, 8);
      return v;
    }
    default:
      return 0;
  }
}

inline int32_t readI32(const uint8_t* p, const Decoder::FieldRef& r) {
  // Signed ints in our formats are 4 bytes; narrower ones are sign-extended.
  uint64_t v = readU(p, r);
  if (r.size == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  if (r.size == 2) return static_cast<int16_t>(static_cast<uint16_t>(v));
  if (r.size == 1) return static_cast<int8_t>(static_cast<uint8_t>(v));
  return static_cast<int32_t>(v);
}

}  // namespace

Result<Decoder> Decoder::create(const EventFormats& formats) {
  Decoder d;
  tep_handle* tep = formats.tep();
  for (EventType t : formats.available()) {
    const EventName* en = eventName(t);
    tep_event* ev = tep_find_event_by_name(tep, en->system, formats.nameOf(t));
    if (!ev) continue;
    if (!d.common_type_.present) {
      if (!toRef(tep_find_common_field(ev, "common_type"), d.common_type_) ||
          !toRef(tep_find_common_field(ev, "common_pid"), d.common_pid_)) {
        return makeError(EINVAL, en->name, "format lacks common_type/common_pid");
      }
      d.common_min_size_ = std::max(d.common_type_.offset + d.common_type_.size,
                                    d.common_pid_.offset + d.common_pid_.size);
    }
    Format f;
    f.type = t;
    f.id = ev->id;
    f.min_size = d.common_min_size_;
    bool ok = true;
    for (const FieldSpec& s : specFor(t)) {
      FieldRef& ref = f.fields[s.slot];
      if (!toRef(tep_find_field(ev, s.name), ref, s.slot == kStackCallers)) {
        if (s.required) {
          log::warn("tracepoint field missing; event not decoded",
                    "event=" + std::string(en->name) + " field=" + s.name);
          ok = false;
        }
        continue;
      }
      f.min_size = std::max<uint32_t>(f.min_size, ref.offset + ref.size);
    }
    if (!ok || f.id < 0 || f.id > 0xffff) continue;
    if (static_cast<size_t>(f.id) >= d.by_id_.size()) d.by_id_.resize(f.id + 1, -1);
    d.by_id_[f.id] = static_cast<int8_t>(d.formats_.size());
    d.formats_.push_back(f);
    d.supported_.push_back(t);
  }
  if (!d.common_type_.present)
    return makeError(ENOENT, "events", "no known event format");
  return d;
}

bool Decoder::supports(EventType t) const {
  return std::find(supported_.begin(), supported_.end(), t) != supported_.end();
}

int Decoder::eventId(EventType t) const {
  for (const auto& f : formats_) {
    if (f.type == t) return f.id;
  }
  return -1;
}

const Decoder::FieldRef& Decoder::field(EventType t, FieldSlot s) const {
  for (const auto& f : formats_) {
    if (f.type == t) return f.fields[s];
  }
  return kAbsent;
}

void Decoder::decodeScan(const uint8_t* p, const FieldRef* fr, EventType t, Event& out) {
  auto opt = [&](FieldSlot s) { return fr[s].present ? readU(p, fr[s]) : 0; };
  out.nid = fr[kNid].present ? readI32(p, fr[kNid]) : 0;
  switch (t) {
    case EventType::kLruIsolate:
      out.nr_scanned = readU(p, fr[kNrScanned]);
      out.nr_taken = readU(p, fr[kNrTaken]);
      out.lru = readI32(p, fr[kLru]);
      break;
    case EventType::kLruShrinkActive:
      out.nr_taken = readU(p, fr[kNrTaken]);
      out.nr_deactivated = readU(p, fr[kNrDeactivated]);
      out.reclaim_flags = static_cast<uint32_t>(readU(p, fr[kReclaimFlags]));
      break;
    case EventType::kWriteFolio:
      out.reclaim_flags = static_cast<uint32_t>(readU(p, fr[kReclaimFlags]));
      break;
    case EventType::kThrottled: {
      int32_t us = readI32(p, fr[kDelayedUs]);
      out.delayed_us = us > 0 ? static_cast<uint64_t>(us) : 0;
      out.reason = static_cast<uint32_t>(readU(p, fr[kReason]));
      break;
    }
    case EventType::kShrinkSlabEnd: {
      // retval is an int on 6.x (freed objects, SHRINK_STOP never reaches it).
      uint64_t v = readU(p, fr[kFreed]);
      out.freed = fr[kFreed].size == 4 ? static_cast<int32_t>(static_cast<uint32_t>(v))
                                       : static_cast<int64_t>(v);
      break;
    }
    case EventType::kReclaimPages:
      out.nr_scanned = readU(p, fr[kNrScanned]);
      out.nr_reclaimed = readU(p, fr[kNrReclaimed]);
      out.nr_dirty = opt(kNrDirty);
      out.nr_writeback = opt(kNrWriteback);
      break;
    default:
      break;
  }
}

bool Decoder::decode(const void* data, uint32_t size, uint64_t ts, Event& out) const {
  out.type = EventType::kUnknown;
  if (size < common_min_size_) return false;
  const auto* p = static_cast<const uint8_t*>(data);
  const uint64_t id = readU(p, common_type_);
  if (id >= by_id_.size() || by_id_[id] < 0) return false;
  const Format& f = formats_[static_cast<size_t>(by_id_[id])];
  if (size < f.min_size) return false;
  const FieldRef* fr = f.fields;
  out.ts = ts;
  out.pid = readI32(p, common_pid_);
  switch (f.type) {
    case EventType::kDirectReclaimBegin:
    case EventType::kMemcgReclaimBegin:
    case EventType::kSoftlimitReclaimBegin:
      out.order = fr[kOrder].present ? readI32(p, fr[kOrder]) : 0;
      break;
    case EventType::kDirectReclaimEnd:
    case EventType::kMemcgReclaimEnd:
    case EventType::kSoftlimitReclaimEnd:
      out.nr_reclaimed = readU(p, fr[kNrReclaimed]);
      break;
    case EventType::kKswapdWake:
    case EventType::kWakeupKswapd:
      out.nid = readI32(p, fr[kNid]);
      out.order = readI32(p, fr[kOrder]);
      break;
    case EventType::kKswapdSleep:
      out.nid = readI32(p, fr[kNid]);
      break;
    case EventType::kLruShrinkInactive:
      out.nid = fr[kNid].present ? readI32(p, fr[kNid]) : 0;
      out.nr_scanned = readU(p, fr[kNrScanned]);
      out.nr_reclaimed = readU(p, fr[kNrReclaimed]);
      out.nr_dirty = fr[kNrDirty].present ? readU(p, fr[kNrDirty]) : 0;
      out.nr_writeback = fr[kNrWriteback].present ? readU(p, fr[kNrWriteback]) : 0;
      out.reclaim_flags = fr[kReclaimFlags].present
                              ? static_cast<uint32_t>(readU(p, fr[kReclaimFlags]))
                              : 0;
      break;
    case EventType::kLruIsolate:
    case EventType::kLruShrinkActive:
    case EventType::kWriteFolio:
    case EventType::kThrottled:
    case EventType::kShrinkSlabStart:
    case EventType::kShrinkSlabEnd:
    case EventType::kReclaimPages:
      decodeScan(p, fr, f.type, out);
      break;
    case EventType::kCgroupRmdir:
    case EventType::kCgroupAttach: {
      out.dst_root = readI32(p, fr[kDstRoot]);
      out.dst_id = fr[kDstId].present ? readU(p, fr[kDstId]) : 0;
      out.target_pid = fr[kTargetPid].present ? readI32(p, fr[kTargetPid]) : 0;
      const FieldRef& loc = fr[kDstPath];
      uint32_t v = static_cast<uint32_t>(readU(p, loc));
      uint32_t off = v & 0xffff;
      uint32_t len = v >> 16;
      if (loc.relative) off += loc.offset + loc.size;
      if (off + len > size) return false;
      const char* s = reinterpret_cast<const char*>(p + off);
      while (len > 0 && s[len - 1] == '\0') --len;
      out.dst_path = std::string_view(s, len);
      break;
    }
    case EventType::kProcessFork:
    case EventType::kProcessExit:
      out.target_pid = readI32(p, fr[kTargetPid]);
      out.comm = {};
      if (fr[kComm].present && fr[kComm].size > 8) {  // exit: char comm[16]
        const char* c = reinterpret_cast<const char*>(p + fr[kComm].offset);
        out.comm = std::string_view(c, strnlen(c, fr[kComm].size));
      }
      break;
    case EventType::kRstatLockContended:
    case EventType::kRstatLocked:
    case EventType::kRstatUnlock:
      out.cg_root = readI32(p, fr[kCgRoot]);
      out.cg_id = readU(p, fr[kCgId]);
      out.contended = fr[kContended].present && readU(p, fr[kContended]) != 0;
      break;
    case EventType::kMemcgFlushStats:
      out.cg_id = readU(p, fr[kCgId]);
      out.needs_flush = readU(p, fr[kNeedsFlush]) != 0;
      break;
    case EventType::kLockContentionBegin:
      out.lock_addr = readU(p, fr[kLockAddr]);
      out.lock_flags = static_cast<uint32_t>(readU(p, fr[kLockFlags]));
      break;
    case EventType::kLockContentionEnd:
      out.lock_addr = readU(p, fr[kLockAddr]);
      out.lock_ret = fr[kLockRet].present ? readI32(p, fr[kLockRet]) : 0;
      break;
    case EventType::kKernelStack: {
      // size = number of callers (6.x); the record holds exactly those.
      const int32_t n = readI32(p, fr[kStackSize]);
      const uint32_t off = fr[kStackCallers].offset;
      const uint32_t fit = (size - off) / 8;
      out.stack_depth = static_cast<uint16_t>(
          std::min<uint32_t>(n < 0 ? 0 : static_cast<uint32_t>(n), std::min(fit, 0xffffu)));
      out.stack = p + off;
      break;
    }
    default:
      return false;
  }
  out.type = f.type;
  return true;
}

}  // namespace memcg::tracing

#include "tracing/tracer.h"

#include <algorithm>
#include <mutex>

#include "common/log.h"
#include "common/file.h"
#include "tracing/lock_stats.h"

namespace memcg::tracing {

namespace {
constexpr size_t kChunk = 1024;
}

Result<std::unique_ptr<Tracer>> Tracer::start(const TracerOptions& opts) {
  std::unique_ptr<Tracer> t(new Tracer());
  AggregatorOptions aopts = opts.aggregator;
  if (opts.detect_hierarchy) {
    // /proc/cgroups (not mountinfo): the hierarchy id that cgroup_attach_task
    // reports as dst_root, 0 when memory is on the v2 hierarchy.
    auto cg = readWholeFile(opts.procfs + "/cgroups");
    if (!cg.ok()) return cg.error();
    auto h = parseMemoryHierarchyId(*cg);
    if (!h)
      return makeError(ENOENT, opts.procfs + "/cgroups", "memory controller not enabled");
    aopts.hierarchy_id = *h;
    if (!opts.memory_root.empty() && opts.memory_v2 != (*h == 0)) {
      return makeError(EINVAL, opts.procfs + "/cgroups",
                       std::string("memory hierarchy is ") + (*h == 0 ? "v2" : "v1") +
                           " but the caller's layout says " +
                           (opts.memory_v2 ? "v2" : "v1"));
    }
  }

  auto session = TracefsSession::open(opts.session);
  if (!session.ok()) return session.error();
  t->session_ = std::move(session.value());

  auto formats = EventFormats::load(t->session_->tracefsRoot());
  if (!formats.ok()) return formats.error();
  t->formats_ = std::make_unique<EventFormats>(std::move(formats.value()));
  auto decoder = Decoder::create(*t->formats_);
  if (!decoder.ok()) return decoder.error();
  t->decoder_ = std::make_unique<Decoder>(std::move(decoder.value()));

  std::vector<EventType> want;
  if (!opts.only_events.empty()) {
    want = opts.only_events;
  } else {
    for (const auto& e : kEventNames) {
      if (e.type == EventType::kWakeupKswapd && !opts.wakeup_kswapd) continue;
      if (e.type == EventType::kLruShrinkInactive && !opts.lru) continue;
      if (!scanEventWanted(e.type, opts)) continue;
      if ((e.type == EventType::kProcessFork || e.type == EventType::kProcessExit) &&
          !opts.fork_exit) {
        continue;
      }
      if (isLockEvent(e.type) && !(opts.locks || opts.lock_callers)) continue;
      want.push_back(e.type);
    }
  }
  EventEnableResult en = enableEvents(
      want, *t->decoder_, *t->formats_, aopts.hierarchy_id,
      [s = t->session_.get(), &inject = opts.enable_fault_injector](
          const char* sys, const char* ev, const std::string& filter) -> Status {
        if (inject) {
          if (int e = inject(sys, ev); e != 0) {
            return makeError(e,
                             s->instanceDir() + "/events/" + sys + "/" + ev + "/enable",
                             "enable (injected)");
          }
        }
        return s->enableEvent(sys, ev, filter);
      });
  if (en.enabled.empty() && !en.refused.empty()) return en.refused.front().second;
  t->enabled_ = std::move(en.enabled);
  for (const auto& r : en.refused) t->refused_.push_back(r.first);

  aopts.mono_clock = t->session_->traceClock() == "mono";
  for (EventType type : t->enabled_) {
    if (isLockEvent(type)) t->locks_ = true;
  }
  t->callers_ = opts.lock_callers && t->decoder_->supports(EventType::kKernelStack) &&
                std::find(t->enabled_.begin(), t->enabled_.end(),
                          EventType::kLockContentionBegin) != t->enabled_.end();
  t->procfs_ = opts.procfs;
  t->lock_addresses_ = opts.lock_addresses;
  t->caller_samples_ = std::max(1u, opts.lock_caller_samples);
  t->caller_interval_ = opts.lock_caller_interval;
  if (t->callers_) t->armCallerTrigger();

  t->aggregator_ = std::make_unique<Aggregator>(
      aopts,
      std::make_unique<ProcCgroupResolver>(opts.procfs, aopts.hierarchy_id, opts.memory_root));
  t->chunk_.resize(kChunk);
  auto st = t->session_->start(t.get());
  if (!st.ok()) return st.error();
  return t;
}

EventEnableResult enableEvents(const std::vector<EventType>& want, const Decoder& decoder,
                               const EventFormats& formats, int hierarchy_id,
                               const EnableEventFn& enable) {
  EventEnableResult out;
  for (EventType type : want) {
    if (type == EventType::kKernelStack) continue;  // a record format, not an event
    const EventName* en = eventName(type);
    if (!decoder.supports(type)) {
      log::info("tracepoint not available on this kernel",
                "event=" + std::string(en->name));
      continue;
    }
    std::string filter;
    if (type == EventType::kCgroupAttach) {
      filter = "dst_root==" + std::to_string(hierarchy_id);
    } else if (type == EventType::kCgroupRmdir) {
      filter = "root==" + std::to_string(hierarchy_id);
    }
    if (isLockEvent(type)) filter = lockEventFilter(type, hierarchy_id);
    Status st = enable(en->system, formats.nameOf(type), filter);
    if (!st.ok()) {
      log::warn("tracepoint enable refused by the kernel; tracing without it",
                "event=" + std::string(en->system) + ":" + en->name +
                    " err=" + log::quote(st.error().message()));
      out.refused.emplace_back(type, st.error());
      continue;
    }
    out.enabled.push_back(type);
  }
  return out;
}

bool scanEventWanted(EventType t, const TracerOptions& o) {
  switch (t) {
    case EventType::kLruIsolate:
    case EventType::kLruShrinkActive:
      return o.lru_detail;
    case EventType::kShrinkSlabStart:
    case EventType::kShrinkSlabEnd:
      return o.shrink_slab;
    case EventType::kWriteFolio:
      return o.write_folio;
    case EventType::kThrottled:
      return o.throttled;
    case EventType::kReclaimPages:
      return o.reclaim_pages;
    case EventType::kCgroupRmdir:
      return o.cgroup_rmdir;
    default:
      return true;
  }
}

Tracer::~Tracer() { stop(); }

void Tracer::stop() {
  if (session_) session_->stop();
  // The instance's removal drops its triggers too; clear ours first anyway so
  // a failed rmdir leaves nothing sampling behind.
  if (session_ && callers_) {
    (void)session_->writeEventFile("lock", "contention_begin", "trigger", "!stacktrace");
    callers_ = false;
  }
}

void Tracer::armCallerTrigger() {
  // A trigger with a count cannot be rewritten in place (EEXIST): remove it
  // (fails harmlessly the first time), then add it with a fresh count.
  (void)session_->writeEventFile("lock", "contention_begin", "trigger", "!stacktrace");
  auto st = session_->writeEventFile("lock", "contention_begin", "trigger",
                                     lockCallerTrigger(caller_samples_));
  if (!st.ok()) {
    log::warn("lock caller sampling unavailable", "err=" + log::quote(st.error().message()));
    callers_ = false;
  }
  armed_at_ = std::chrono::steady_clock::now();
}

void Tracer::onRecord(const void* data, uint32_t size, uint64_t ts, int cpu) {
  Event& e = chunk_[chunk_used_];
  if (!decoder_->decode(data, size, ts, e)) {
    decode_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  e.cpu = static_cast<int16_t>(cpu);
  if (++chunk_used_ == chunk_.size()) flush();
}

void Tracer::flush() {
  if (chunk_used_ == 0) return;
  aggregator_->apply(std::span<const Event>(chunk_.data(), chunk_used_));
  chunk_used_ = 0;
}

void Tracer::onRoundEnd() {
  // dst_path views point into the session's sub-buffers: apply before they go.
  flush();
  aggregator_->endRound();
  const auto now = std::chrono::steady_clock::now();
  if (callers_ && now - armed_at_ >= caller_interval_) {
    armCallerTrigger();
  }
  // The reclaim report's window baselines, recorded here on the reader's own
  // rounds (which run every idle wake-up too), not as a side effect of a
  // scrape or an API read: a window then means the same whoever asks.
  if (history_.due(now)) history_.maybeRecord(now, snapshot());
}

TraceSnapshot Tracer::snapshot() const {
  TraceSnapshot s = aggregator_->snapshot();
  SessionStats ss = session_->stats();
  s.running = session_->running();
  s.events_read = ss.records;
  s.events_lost = ss.lost;
  s.decode_errors = decode_errors_.load(std::memory_order_relaxed);
  s.read_errors = ss.read_errors;
  s.reads_failing = ss.reads_failing;
  s.reader_cpu_ns = ss.reader_cpu_ns;
  s.events_out_of_order = ss.out_of_order;
  s.events_enabled = enabled_;
  s.events_refused = refused_;
  s.locks.enabled = locks_;
  s.locks.callers = callers_.load();
  return s;
}

void Tracer::markReclaimer(int32_t tid) { aggregator_->registerProactiveReclaimer(tid); }
void Tracer::unmarkReclaimer(int32_t tid) { aggregator_->unregisterProactiveReclaimer(tid); }
bool Tracer::beginEpisode(int32_t tid, std::string_view cgroup) {
  return aggregator_->beginProactiveTarget(tid, cgroup);
}
void Tracer::endEpisode(int32_t tid) { aggregator_->endProactiveTarget(tid); }

}  // namespace memcg::tracing

// The bpf backend's loader and map reader (bpf_tracer.h). Built only with
// MEMCG_HAVE_BPF; the skeleton header is generated at build time by bpftool
// from memcg_trace.bpf.c compiled against the running kernel's BTF.
#include "tracing/bpf/bpf_tracer.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "common/file.h"
#include "common/log.h"
#include "memcg_trace.skel.h"
#include "tracing/bpf/memcg_trace_bpf.h"
#include "tracing/cgroup_resolver.h"
#include "tracing/lock_stats.h"
#include "tracing/report_rows.h"
#include "tracing/series_table.h"

namespace memcg::tracing::bpf {

// The program's index orders are the tracefs backend's.
static_assert(MT_KINDS == kReclaimKinds);
static_assert(MT_CONTEXTS == kReclaimContexts);
static_assert(MT_LRU_TYPES == kLruTypes);
static_assert(MT_REASONS == kUnpairedReasons);
static_assert(MT_WAKEUP_ORDERS == kWakeupOrders);
static_assert(MT_LRU_LISTS == kLruLists);
static_assert(MT_THROTTLE_SLOTS == kThrottleSlots);
static_assert(MT_BOUNDS == kStallBoundsNs.size() && MT_BOUNDS == kLockBoundsNs.size());
static_assert(MT_BUCKETS == StallHistogram{}.buckets.size());
static_assert(MT_BUCKETS == LockHistogram{}.buckets.size());
static_assert(MT_STACK_FRAMES == kMaxStackFrames);
static_assert(static_cast<int>(ReclaimKind::kProactive) == 3);
static_assert(static_cast<int>(ReclaimContext::kKswapd) == 4);
static_assert(static_cast<int>(UnpairedReason::kBeginOpenTooLong) == 3);

namespace {

uint64_t threadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t monoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

// libbpf's own messages (warnings and info) to our debug log, its debug
// chatter dropped. Whole: a refused program's message is the verifier's
// log, kilobytes long, and its end says why.
int libbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  va_list again;
  va_copy(again, args);
  const int n = vsnprintf(nullptr, 0, fmt, args);
  std::string msg(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) vsnprintf(msg.data(), msg.size() + 1, fmt, again);
  va_end(again);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  if (!msg.empty()) log::debug("libbpf", "msg=" + log::quote(msg));
  return n;
}

template <class H>
void toHist(const mt_hist& m, H& h) {
  for (size_t i = 0; i < h.buckets.size(); ++i) h.buckets[i] = m.buckets[i];
  h.count = m.count;
  h.sum = m.sum;
}

// A per-CPU map value as the kernel copies it in and out: one T per
// possible CPU, each in a slot rounded up to 8 bytes.
template <class T>
constexpr size_t perCpuStride() {
  return (sizeof(T) + 7) / 8 * 8;
}

template <class T>
std::vector<uint8_t> perCpuBuffer(int ncpus) {
  return std::vector<uint8_t>(perCpuStride<T>() * static_cast<size_t>(ncpus));
}

// Sums every u64 of per-CPU values (the structs hold only u64s).
template <class T>
T sumPerCpu(const std::vector<uint8_t>& raw, int ncpus) {
  static_assert(sizeof(T) % 8 == 0);
  T out{};
  auto* o = reinterpret_cast<uint64_t*>(&out);
  const size_t words = sizeof(T) / 8;
  const size_t stride = perCpuStride<T>();
  for (int c = 0; c < ncpus; ++c) {
    const auto* v =
        reinterpret_cast<const uint64_t*>(raw.data() + stride * static_cast<size_t>(c));
    for (size_t i = 0; i < words; ++i) o[i] += v[i];
  }
  return out;
}

// Every key of a map, once. Keys change while we read: when the key we
// stand on is deleted (a cgroup's rmdir, a task's exit), a hash map's
// get_next_key starts over from its first key. The walk stops there: the
// keys after it are read at the next scrape (re-walking would cost O(n) per
// deletion, and tasks exit all the time).
template <class K>
std::vector<K> keysOf(int fd, size_t max_entries) {
  std::vector<K> keys;
  std::set<std::vector<uint8_t>> seen;
  K cur{}, next{};
  const void* prev = nullptr;
  while (keys.size() <= max_entries && bpf_map_get_next_key(fd, prev, &next) == 0) {
    const auto* b = reinterpret_cast<const uint8_t*>(&next);
    if (!seen.emplace(b, b + sizeof(K)).second) break;
    keys.push_back(next);
    cur = next;
    prev = &cur;
  }
  return keys;
}
template <class K>
std::vector<K> keysOf(bpf_map* map) {
  return keysOf<K>(bpf_map__fd(map), bpf_map__max_entries(map));
}

// Entries of a hash map, counted by batched lookups: a few syscalls where
// get_next_key takes one per key (for a map that stays full: the LRU).
size_t countEntries(bpf_map* map) {
  const int fd = bpf_map__fd(map);
  // Room for the whole map: a batch ends at a hash bucket's end, and a
  // bucket larger than the room left is refused (ENOSPC).
  const uint32_t room = bpf_map__max_entries(map);
  std::vector<uint8_t> keys(size_t{bpf_map__key_size(map)} * room);
  std::vector<uint8_t> vals(size_t{bpf_map__value_size(map)} * room);
  uint32_t in = 0, out = 0;
  size_t n = 0;
  for (bool first = true;; first = false) {
    uint32_t count = room;
    const int err = bpf_map_lookup_batch(fd, first ? nullptr : &in, &out, keys.data(),
                                         vals.data(), &count, nullptr);
    n += count;
    if (err != 0 || count == 0) break;  // ENOENT: the last batch
    in = out;
  }
  return n;
}

template <class V, class K>
bool lookupPerCpu(int fd, const K& key, int ncpus, V& out) {
  std::vector<uint8_t> raw = perCpuBuffer<V>(ncpus);
  if (bpf_map_lookup_elem(fd, &key, raw.data()) != 0) return false;
  out = sumPerCpu<V>(raw, ncpus);
  return true;
}

// A report row as the program counted it.
ProcessTraceStats toProcessRow(const mt_task_row& r) {
  ProcessTraceStats p;
  p.pid = static_cast<int32_t>(r.tid);
  p.comm.assign(r.comm, strnlen(r.comm, sizeof r.comm));
  p.kswapd = (r.rep.flags & MT_ROW_KSWAPD) != 0;
  for (size_t k = 0; k < kReclaimKinds; ++k) p.reclaims[k] = r.rep.reclaims[k];
  p.stall_ns = r.rep.stall_ns;
  p.softlimit_ns = r.rep.softlimit_ns;
  p.wake_requests = r.rep.wake_requests;
  p.scanned_pages = r.rep.scanned;
  p.reclaimed_pages = r.rep.reclaimed;
  p.kswapd_wakeups = r.rep.kswapd_wakeups;
  p.kswapd_rewakeups = r.rep.kswapd_rewakeups;
  p.kswapd_awake_ns = r.rep.kswapd_awake_ns;
  p.write_async = r.rep.write_async;  // (write_sync: the kernel never sets it)
  p.throttled = r.rep.throttled;
  p.throttled_us = r.rep.throttled_us;
  return p;
}

bool kernelHasTracepoint(const btf* vmlinux, const char* name) {
  std::string t = std::string("btf_trace_") + name;
  return vmlinux && btf__find_by_name_kind(vmlinux, t.c_str(), BTF_KIND_TYPEDEF) > 0;
}

// The number of arguments tracepoint `name` passes (its btf_trace_ typedef:
// a pointer to a function of (void *, args...)); -1 if unknown.
int tracepointArgs(const btf* vmlinux, const char* name) {
  if (!vmlinux) return -1;
  std::string t = std::string("btf_trace_") + name;
  int id = btf__find_by_name_kind(vmlinux, t.c_str(), BTF_KIND_TYPEDEF);
  if (id <= 0) return -1;
  const btf_type* ty = btf__type_by_id(vmlinux, static_cast<uint32_t>(id));
  while (ty && (btf_is_typedef(ty) || btf_is_ptr(ty))) ty = btf__type_by_id(vmlinux, ty->type);
  if (!ty || !btf_is_func_proto(ty)) return -1;
  return static_cast<int>(btf_vlen(ty)) - 1;
}

}  // namespace

struct BpfTracer::Impl {
  BpfTracerOptions opts;
  int hierarchy_id = 0;
  int ncpus = 1;
  memcg_trace* skel = nullptr;
  std::unique_ptr<ProcCgroupResolver> resolver;

  mutable std::mutex mu;
  mutable std::unordered_map<uint64_t, std::string> paths;  // resolved cgroup ids
  mutable std::unordered_set<uint64_t> missing;  // ids no walk found (pathOf)
  // Begins counted as open too long: (tid, pair index, begin ts), once each.
  mutable std::set<std::tuple<uint32_t, int, uint64_t>> overdue;
  mutable std::array<uint64_t, kReclaimKinds> overdue_count{};
  mutable uint64_t cpu_ns = 0;
  mutable std::atomic<uint64_t> lost_seen{0};  // lostEvents()' last answer
  // Map fills as the last snapshot() read them (mapSizes()); tasks have no
  // map bound: at most one entry per task, so the kernel's pid_max.
  mutable std::vector<MapSize> sizes;

  uint64_t pid_max = 0;
  std::unordered_set<int32_t> reclaimers;

  // Report rows of exited tasks, drained from the kernel's `exited` map (the
  // tracefs backend's own keeping: the most stalled, the rest in "other").
  std::unique_ptr<ReportRows> exited_rows;
  mutable std::set<int32_t> drained;  // tids drained since the last snapshot
  mutable uint64_t exited_entries = 0;  // in the kernel map at the last drain
  SnapshotHistory history;
  // The lock API's state, and the top locks' "other" (locks moved out of
  // the kernel map when it was half full).
  LockIds lock_ids;
  KallsymsOnce kallsyms;
  mutable TopLock other_locks;
  // Lock callers: on (and contention_begin loaded); samples of the stacks
  // moved out of the kernel map when it was half full.
  bool callers = false;
  mutable uint64_t stacks_other = 0;

  // The drain thread: every second, and the report's window baselines.
  std::thread drainer;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;

  // Stops the drain thread (it reads through the BpfTracer: stopped before
  // the BpfTracer goes).
  void stopDrainer() {
    {
      std::lock_guard<std::mutex> g(stop_mu);
      stopping = true;
    }
    stop_cv.notify_all();
    if (drainer.joinable()) drainer.join();
  }

  ~Impl() {
    stopDrainer();
    if (skel) memcg_trace__destroy(skel);
  }

  // The memory cgroup id of task `tid` (the program's task_memcg iterator,
  // one task by a tid filter), 0 if there is no such task.
  uint64_t taskMemcg(int32_t tid) const {
    union bpf_iter_link_info linfo;
    std::memset(&linfo, 0, sizeof linfo);
    linfo.task.tid = static_cast<uint32_t>(tid);
    LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo,
                .link_info_len = sizeof linfo);
    bpf_link* link = bpf_program__attach_iter(skel->progs.task_memcg, &opts);
    if (!link) return 0;
    uint64_t id = 0;
    if (int fd = bpf_iter_create(bpf_link__fd(link)); fd >= 0) {
      mt_task_memcg row{};
      ssize_t n;
      do {
        n = ::read(fd, &row, sizeof row);
      } while (n < 0 && errno == EINTR);
      if (n == static_cast<ssize_t>(sizeof row) && row.tid == static_cast<uint32_t>(tid))
        id = row.cg_id;
      ::close(fd);
    }
    bpf_link__destroy(link);
    return id;
  }

  std::string labelOf(uint64_t cg_id) const {
    if (cg_id == 0) return "_unknown";
    auto p = pathOf(cg_id);
    return p ? *p : std::string("_unknown");
  }

  // Moves the exited tasks' rows from the kernel into exited_rows (under mu).
  void drainExited() const {
    const int fd = bpf_map__fd(skel->maps.exited);
    const auto keys = keysOf<uint32_t>(skel->maps.exited);
    exited_entries = keys.size();
    for (uint32_t tid : keys) {
      if (tid == MT_OTHER_TID) continue;
      mt_task_row r{};
      if (bpf_map_lookup_and_delete_elem(fd, &tid, &r) != 0) continue;
      ProcessTraceStats p = toProcessRow(r);
      p.cgroup = labelOf(r.rep.cg_id);
      drained.insert(p.pid);
      exited_rows->keepExited(std::move(p));
    }
  }

  void drainLoop(const BpfTracer* self) {
    std::unique_lock<std::mutex> lk(stop_mu);
    while (!stop_cv.wait_for(lk, std::chrono::seconds(1), [&] { return stopping; })) {
      lk.unlock();
      {
        std::lock_guard<std::mutex> g(mu);
        drainExited();
      }
      // The window baselines, on this thread's own clock (as the tracefs
      // backend records them on its reader's rounds), not on a scrape.
      const auto now = std::chrono::steady_clock::now();
      if (history.due(now)) history.maybeRecord(now, self->snapshot());
      lk.lock();
    }
  }

  // Misses are remembered until the next snapshot: an id no walk finds is a
  // removed cgroup, and the taskstats ledger asks again for an exit it could
  // not place (every 200 ms, for 10 s): one walk each would cost a walk of
  // the whole hierarchy each time.
  std::optional<std::string> pathOf(uint64_t id) const {
    if (auto it = paths.find(id); it != paths.end()) return it->second;
    if (missing.count(id)) return std::nullopt;
    auto p = resolver->pathOfId(id);
    if (p) paths.emplace(id, *p);
    else missing.insert(id);
    return p;
  }

  // The tasks with state, from the program's task iterator.
  std::vector<mt_task_row> taskRows() const {
    std::vector<mt_task_row> rows;
    if (!skel->links.task_scan) return rows;
    int fd = bpf_iter_create(bpf_link__fd(skel->links.task_scan));
    if (fd < 0) return rows;
    std::vector<char> buf(1 << 16);
    std::string data;
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      data.append(buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    rows.resize(data.size() / sizeof(mt_task_row));
    // No task open: an empty vector's data() may be null, which memcpy must not get.
    if (!rows.empty()) std::memcpy(rows.data(), data.data(), rows.size() * sizeof(mt_task_row));
    return rows;
  }

  // The sampled callers into the lock snapshot (under mu): one TopStack per
  // stack, its kind that of the lock flags with the most samples (a stack
  // ends in one lock's slow path, so nearly always its only flags), ranked
  // as the tracefs backend ranks its own. More than half the map in use:
  // the lighter half is moved out (read and deleted at once) into "other",
  // as the tracefs backend prunes its stacks.
  void readCallers(LockSnapshot& L, const mt_node& n) const {
    L.callers = true;
    L.stacks_sampled = n.callers_sampled;
    const int fd = bpf_map__fd(skel->maps.callers);
    const auto keys = keysOf<mt_caller_key>(skel->maps.callers);
    const size_t max_stacks = bpf_map__max_entries(skel->maps.callers);
    sizes.push_back({"callers", keys.size(), max_stacks, n.callers_full});
    struct Entry {
      mt_caller_key key;
      uint64_t count;
    };
    std::vector<Entry> entries;
    entries.reserve(keys.size());
    for (const mt_caller_key& k : keys) {
      mt_caller c{};
      if (lookupPerCpu(fd, k, ncpus, c)) entries.push_back({k, c.count});
    }
    if (entries.size() > max_stacks / 2) {
      std::sort(entries.begin(), entries.end(),
                [](const Entry& a, const Entry& b) { return a.count > b.count; });
      const size_t keep = max_stacks / 4;
      std::vector<uint8_t> raw = perCpuBuffer<mt_caller>(ncpus);
      for (size_t i = keep; i < entries.size(); ++i) {
        // The count as deleted (with the samples since the walk above).
        if (bpf_map_lookup_and_delete_elem(fd, &entries[i].key, raw.data()) != 0) continue;
        stacks_other += sumPerCpu<mt_caller>(raw, ncpus).count;
      }
      entries.resize(keep);
    }
    // Samples the full map refused, and those moved out.
    L.stacks_other = n.callers_full + stacks_other;
    std::map<std::vector<uint64_t>, std::pair<TopStack, uint64_t>> by_frames;  // + its kind's count
    for (const Entry& e : entries) {
      std::vector<uint64_t> frames(std::begin(e.key.frames), std::end(e.key.frames));
      while (!frames.empty() && frames.back() == 0) frames.pop_back();  // past its depth
      auto& [st, kind_count] = by_frames[frames];
      if (e.count > kind_count) {
        st.kind = lockKindFromFlags(e.key.flags);
        kind_count = e.count;
      }
      st.count += e.count;
      if (st.frames.empty()) st.frames = std::move(frames);
    }
    std::vector<TopStack> all;
    all.reserve(by_frames.size());
    for (auto& [frames, v] : by_frames) all.push_back(std::move(v.first));
    rankStacks(std::move(all), L);
  }

  // The node's counters: the programs' slot and the lock programs' rescue
  // twins' slots (memcg_trace.bpf.c), summed.
  // (from: the first slot summed, 1 + MT_TWINS: the second twins' alone.)
  mt_node nodeStats(uint32_t from = 0) const {
    constexpr uint32_t kSlots = 1 + MT_TWINS;
    const size_t stride = perCpuStride<mt_node>() * static_cast<size_t>(ncpus);
    std::vector<uint8_t> raw((kSlots - from) * stride);
    const int fd = bpf_map__fd(skel->maps.node);
    for (uint32_t k = from; k < kSlots; ++k)
      if (bpf_map_lookup_elem(fd, &k, raw.data() + (k - from) * stride) != 0) return {};
    return sumPerCpu<mt_node>(raw, static_cast<int>(kSlots - from) * ncpus);
  }

  BpfTracer::Misses misses() const {
    BpfTracer::Misses out;
    bpf_program* prog = nullptr;
    bpf_object__for_each_program(prog, skel->obj) {
      int fd = bpf_program__fd(prog);
      if (fd < 0) continue;
      bpf_prog_info info{};
      uint32_t len = sizeof info;
      if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
      const bool twin =
          prog == skel->progs.cont_begin_twin || prog == skel->progs.cont_end_twin ||
          prog == skel->progs.cont_begin_tw2 || prog == skel->progs.cont_end_tw2;
      (twin ? out.twins_missed : out.missed) += info.recursion_misses;
      if (info.recursion_misses != 0)
        out.by_program.emplace_back(bpf_program__name(prog), info.recursion_misses);
    }
    // Read after the misses: a twin counts a rescue only after the kernel
    // counted the main program's miss, so rescued <= missed here.
    out.rescued = nodeStats().lock_rescued;
    out.rescued_second = nodeStats(MT_TWINS).lock_rescued;
    return out;
  }

  // Events the programs never saw: the misses of every program but the
  // rescue twins (theirs are events the main program handled), less those
  // the twins handled; kept monotonic (a counter) over reads.
  uint64_t lostEvents() const {
    const BpfTracer::Misses m = misses();
    const uint64_t lost = m.missed > m.rescued ? m.missed - m.rescued : 0;
    uint64_t seen = lost_seen.load();
    while (lost > seen && !lost_seen.compare_exchange_weak(seen, lost)) {
    }
    return std::max(lost, seen);
  }
};

BpfTracer::BpfTracer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpfTracer::~BpfTracer() {
  if (impl_) impl_->stopDrainer();
}

Result<std::unique_ptr<BpfTracer>> BpfTracer::start(const BpfTracerOptions& o) {
  Availability a = probe(o);
  if (!a.ok) return makeError(EPERM, "bpf", a.reason);
  auto impl = std::make_unique<Impl>();
  impl->opts = o;
  if (!o.memory_v2) {
    auto text = readWholeFile(o.procfs + "/cgroups");
    if (!text.ok()) return text.error();
    auto id = parseMemoryHierarchyId(*text);
    if (!id)
      return makeError(ENOENT, o.procfs + "/cgroups", "memory controller not enabled");
    impl->hierarchy_id = *id;
  }
  impl->resolver =
      std::make_unique<ProcCgroupResolver>(o.procfs, impl->hierarchy_id, o.memory_root);
  {
    auto pm = readWholeFile(o.procfs + "/sys/kernel/pid_max");
    impl->pid_max = pm.ok() ? std::strtoull(pm->c_str(), nullptr, 10) : 0;
  }
  impl->ncpus = libbpf_num_possible_cpus();
  if (impl->ncpus <= 0)
    return makeError(-impl->ncpus, "bpf", "cannot count possible CPUs");
  libbpf_set_print(libbpfPrint);

  memcg_trace* s = memcg_trace__open();
  if (!s) return makeError(errno, "bpf", "cannot open the BPF object");
  impl->skel = s;
  for (size_t i = 0; i < kStallBoundsNs.size(); ++i) {
    s->rodata->stall_bounds[i] = kStallBoundsNs[i];
    s->rodata->lock_bounds[i] = kLockBoundsNs[i];
  }
  s->rodata->hierarchy_id = impl->hierarchy_id;
  s->rodata->locks_on = o.locks ? 1 : 0;
  s->rodata->test_lock_hold_ns = o.test_lock_hold_ns;
  s->rodata->test_first_twin_off = o.test_first_twin_off ? 1 : 0;
  s->rodata->callers_on = o.locks && o.lock_callers ? 1 : 0;
  // Below the budget word's count bits less any CPU count (mt_budget_take).
  s->rodata->caller_samples = std::clamp<uint64_t>(o.lock_caller_samples, 1, 1u << 16);
  s->rodata->caller_interval_ns =
      std::max<uint64_t>(1, static_cast<uint64_t>(
                                std::chrono::nanoseconds(o.lock_caller_interval).count()));
  bpf_map__set_max_entries(s->maps.cgroups, static_cast<uint32_t>(o.max_cgroups + 1));
  bpf_map__set_max_entries(s->maps.rstat, static_cast<uint32_t>(o.max_cgroups + 1));
  bpf_map__set_max_entries(s->maps.details, static_cast<uint32_t>(o.max_cgroups + 1));
  bpf_map__set_max_entries(s->maps.lock_waits, static_cast<uint32_t>(o.max_lock_series));
  bpf_map__set_max_entries(s->maps.lock_addrs, static_cast<uint32_t>(o.max_lock_addrs + 1));
  bpf_map__set_max_entries(s->maps.callers, static_cast<uint32_t>(o.max_caller_stacks));
  // + the "other" entry.
  bpf_map__set_max_entries(s->maps.exited, static_cast<uint32_t>(o.max_exited_tasks + 1));
  // The taskstats exit attribution only when asked: its map is not created
  // and its programs not loaded otherwise. task_memcg is attached per
  // question (with a tid filter), not at start.
  bpf_map__set_max_entries(s->maps.exit_cgroups, static_cast<uint32_t>(o.max_exit_cgroups));
  bpf_map__set_autocreate(s->maps.exit_cgroups, o.exit_cgroups);
  bpf_program__set_autoload(s->progs.exit_cgroup, o.exit_cgroups);
  bpf_program__set_autoload(s->progs.task_memcg, o.exit_cgroups);
  bpf_program__set_autoattach(s->progs.task_memcg, false);

  // Lock probes only when asked; any probe this kernel lacks is left out
  // (cgroup_rstat_* and memcg_flush_stats are recent), as the tracefs
  // backend skips events the kernel has no format for.
  btf* vmlinux = btf__parse(o.btf_path.c_str(), nullptr);
  if (!vmlinux) return makeError(errno, o.btf_path, "cannot parse the kernel's BTF");
  const std::pair<bpf_program*, const char*> lock_progs[] = {
      {s->progs.contention_begin, "contention_begin"},
      {s->progs.cont_begin_twin, "contention_begin"},
      {s->progs.cont_begin_tw2, "contention_begin"},
      {s->progs.contention_end, "contention_end"},
      {s->progs.cont_end_twin, "contention_end"},
      {s->progs.cont_end_tw2, "contention_end"},
      {s->progs.rstat_contended, "cgroup_rstat_lock_contended"},
      {s->progs.rstat_locked, "cgroup_rstat_locked"},
      {s->progs.rstat_unlock, "cgroup_rstat_unlock"},
      {s->progs.memcg_flush_stats, "memcg_flush_stats"},
  };
  for (auto [prog, tp] : lock_progs)
    bpf_program__set_autoload(prog, o.locks && kernelHasTracepoint(vmlinux, tp));
  impl->callers = o.locks && o.lock_callers && kernelHasTracepoint(vmlinux, "contention_begin");
  const std::pair<bpf_program*, const char*> softlimit[] = {
      {s->progs.softlimit_begin, "mm_vmscan_memcg_softlimit_reclaim_begin"},
      {s->progs.softlimit_end, "mm_vmscan_memcg_softlimit_reclaim_end"},
  };
  for (auto [prog, tp] : softlimit)
    bpf_program__set_autoload(prog, kernelHasTracepoint(vmlinux, tp));
  // Detail events only when asked, as the tracefs backend (scanEventWanted).
  const std::tuple<bpf_program*, const char*, bool> detail_progs[] = {
      {s->progs.lru_isolate7, "mm_vmscan_lru_isolate", o.lru_detail},
      {s->progs.lru_isolate8, "mm_vmscan_lru_isolate", o.lru_detail},
      {s->progs.lru_shrink_active, "mm_vmscan_lru_shrink_active", o.lru_detail},
      {s->progs.shrink_slab_start, "mm_shrink_slab_start", o.shrink_slab},
      {s->progs.shrink_slab_end, "mm_shrink_slab_end", o.shrink_slab},
  };
  for (auto [prog, tp, want] : detail_progs)
    bpf_program__set_autoload(prog, want && kernelHasTracepoint(vmlinux, tp));
  // Only the form of mm_vmscan_lru_isolate this kernel has: 6.1 passes
  // isolate_mode before lru (8 arguments; 7 since it was dropped).
  const int isolate_args = tracepointArgs(vmlinux, "mm_vmscan_lru_isolate");
  if (isolate_args != 7) bpf_program__set_autoload(s->progs.lru_isolate7, false);
  if (isolate_args != 8) bpf_program__set_autoload(s->progs.lru_isolate8, false);
  // write_folio, throttled and reclaim_pages as the tracefs backend enables
  // them (TracerOptions: on unless switched off), each where the kernel has
  // it: write_folio is mm_vmscan_writepage on older kernels (of a page;
  // the program reads no argument; Debian's 6.1 has write_folio),
  // reclaim_pages (4 arguments) is recent (not in 6.1), throttled 5.16.
  const bool has_write_folio = kernelHasTracepoint(vmlinux, "mm_vmscan_write_folio");
  bpf_program__set_autoload(s->progs.write_folio_prog, o.write_folio && has_write_folio);
  bpf_program__set_autoload(
      s->progs.writepage_prog,
      o.write_folio && !has_write_folio && kernelHasTracepoint(vmlinux, "mm_vmscan_writepage"));
  bpf_program__set_autoload(s->progs.throttled,
                            o.throttled && kernelHasTracepoint(vmlinux, "mm_vmscan_throttled"));
  bpf_program__set_autoload(s->progs.reclaim_pages,
                            o.reclaim_pages &&
                                tracepointArgs(vmlinux, "mm_vmscan_reclaim_pages") == 4);
  // Migrations into memcgs: always, as the tracefs backend's pid cache
  // needs them there.
  bpf_program__set_autoload(s->progs.cgroup_attach,
                            kernelHasTracepoint(vmlinux, "cgroup_attach_task"));
  btf__free(vmlinux);

  if (int err = memcg_trace__load(s); err != 0)
    return makeError(-err, "bpf",
                     "loading the BPF program failed (verifier or permission)");
  // The overflow series exists from the start, so a full map always has a
  // place to charge to.
  {
    std::vector<uint8_t> zero = perCpuBuffer<mt_cgroup>(impl->ncpus);
    const uint64_t key = MT_OVERFLOW_ID;
    if (bpf_map_update_elem(bpf_map__fd(s->maps.cgroups), &key, zero.data(), BPF_ANY) !=
        0)
      return makeError(errno, "bpf", "cannot create the overflow series");
    // The top locks' "other" entry.
    std::vector<uint8_t> lzero = perCpuBuffer<mt_lock_addr>(impl->ncpus);
    // (| 1, | 2: the rescue twins')
    for (uint64_t lkey = MT_OTHER_LOCK; lkey <= (MT_OTHER_LOCK | MT_TWINS); ++lkey)
      if (bpf_map_update_elem(bpf_map__fd(s->maps.lock_addrs), &lkey, lzero.data(), BPF_ANY) !=
          0)
        return makeError(errno, "bpf", "cannot create the top locks' other entry");
    // And the detail series' overflow entry.
    std::vector<uint8_t> dzero = perCpuBuffer<mt_detail>(impl->ncpus);
    if (bpf_map_update_elem(bpf_map__fd(s->maps.details), &key, dzero.data(), BPF_ANY) != 0)
      return makeError(errno, "bpf", "cannot create the detail overflow series");
    // Likewise the report's "other" row for exited tasks the full map refuses.
    mt_task_row other{};
    const uint32_t okey = MT_OTHER_TID;
    if (bpf_map_update_elem(bpf_map__fd(s->maps.exited), &okey, &other, BPF_ANY) != 0)
      return makeError(errno, "bpf", "cannot create the exited tasks' other row");
  }
  if (int err = memcg_trace__attach(s); err != 0)
    return makeError(-err, "bpf", "attaching the BPF programs failed");
  impl->exited_rows = std::make_unique<ReportRows>(o.max_processes, o.max_exited_processes);
  auto t = std::unique_ptr<BpfTracer>(new BpfTracer(std::move(impl)));
  const BpfTracer* self = t.get();
  t->impl_->drainer = std::thread([self] { self->impl_->drainLoop(self); });
  return t;
}

TraceSnapshot BpfTracer::snapshot() const {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  const uint64_t cpu0 = threadCpuNs();
  TraceSnapshot s;
  s.running = true;
  const int ncpus = m.ncpus;

  const mt_node n = m.nodeStats();
  s.events_read = n.events;
  s.aggregator.events = n.events;
  s.events_lost = m.lostEvents();
  s.aggregator.overflow_events = n.overflow_events;
  s.aggregator.cgroups_removed = n.cgroups_removed;
  for (size_t k = 0; k < kReclaimKinds; ++k)
    for (size_t r = 0; r < kUnpairedReasons; ++r)
      s.aggregator.unpaired[k][r] = n.unpaired[k][r];
  std::copy(std::begin(n.wakeup_by_order), std::end(n.wakeup_by_order),
            s.node.wakeup_requests_by_order.begin());
  s.node.kswapd_wakeups = n.kswapd_wakeups;
  s.node.kswapd_rewakeups = n.kswapd_rewakeups;
  s.node.kswapd_awake_ns = n.kswapd_awake_ns;

  // Per-cgroup series; ids no walk can find (gone between the event and the
  // scrape) are folded into "_unknown", as the tracefs backend does.
  const int cg_fd = bpf_map__fd(m.skel->maps.cgroups);
  std::unordered_set<uint64_t> live_ids;
  CgroupTraceStats unknown;
  unknown.unknown = true;
  bool have_unknown = false;
  auto fold = [](const mt_cgroup& v, CgroupTraceStats& c) {
    for (size_t k = 0; k < kReclaimKinds; ++k) {
      ReclaimStats r;
      r.total = v.reclaim[k].total;
      r.reclaimed_pages = v.reclaim[k].reclaimed_pages;
      r.unpaired = v.reclaim[k].unpaired;
      toHist(v.reclaim[k].stall, r.stall);
      c.reclaim[k].total += r.total;
      c.reclaim[k].reclaimed_pages += r.reclaimed_pages;
      c.reclaim[k].unpaired += r.unpaired;
      c.reclaim[k].stall.merge(r.stall);
    }
    for (size_t x = 0; x < kReclaimContexts; ++x)
      for (size_t l = 0; l < kLruTypes; ++l) {
        LruStats& d = c.lru[x][l];
        d.scanned_pages += v.lru[x][l].scanned;
        d.reclaimed_pages += v.lru[x][l].reclaimed;
        d.dirty_pages += v.lru[x][l].dirty;
        d.writeback_pages += v.lru[x][l].writeback;
      }
    c.kswapd_wakeup_requests += v.wakeup_kswapd;
    for (size_t x = 0; x < kReclaimContexts; ++x)
      c.detail.write_folios[x][static_cast<size_t>(WriteIo::kAsync)] += v.write_folios[x];
    for (size_t r = 0; r < kThrottleSlots; ++r) {
      c.detail.throttled[r].count += v.throttled[r].count;
      c.detail.throttled[r].delayed_us += v.throttled[r].delayed_us;
    }
    c.detail.pageout_scanned_pages += v.pageout_scanned;
    c.detail.pageout_reclaimed_pages += v.pageout_reclaimed;
    c.tasks_attached += v.tasks_attached;
  };
  const std::vector<uint64_t> cg_keys = keysOf<uint64_t>(m.skel->maps.cgroups);
  const uint64_t cgroup_keys = cg_keys.size();
  for (uint64_t id : cg_keys) {
    mt_cgroup v{};
    if (!lookupPerCpu(cg_fd, id, ncpus, v)) continue;
    live_ids.insert(id);
    if (id == MT_OVERFLOW_ID) {
      CgroupTraceStats c;
      c.overflow = true;
      fold(v, c);
      s.cgroups.push_back(std::move(c));
      continue;
    }
    auto path = m.pathOf(id);
    if (!path) {
      fold(v, unknown);
      have_unknown = true;
      continue;
    }
    CgroupTraceStats c;
    c.path = *path;
    c.id = id;
    fold(v, c);
    s.cgroups.push_back(std::move(c));
  }
  uint64_t detail_keys = 0;
  if (m.opts.lru_detail || m.opts.shrink_slab) {
    // The detail series, folded into the series of the same cgroup (made if
    // the cgroup has none: detail events outside any reclaim it counted).
    std::unordered_map<uint64_t, size_t> at;
    for (size_t i = 0; i < s.cgroups.size(); ++i) {
      if (s.cgroups[i].overflow) at[MT_OVERFLOW_ID] = i;
      else at[s.cgroups[i].id] = i;
    }
    const int d_fd = bpf_map__fd(m.skel->maps.details);
    const auto d_keys = keysOf<uint64_t>(m.skel->maps.details);
    detail_keys = d_keys.size();
    for (uint64_t id : d_keys) {
      mt_detail v{};
      if (!lookupPerCpu(d_fd, id, ncpus, v)) continue;
      CgroupTraceStats* c = nullptr;
      if (auto it = at.find(id); it != at.end()) {
        c = &s.cgroups[it->second];
      } else if (auto path = m.pathOf(id); path && id != MT_OVERFLOW_ID) {
        CgroupTraceStats n;
        n.path = *path;
        n.id = id;
        s.cgroups.push_back(std::move(n));
        at[id] = s.cgroups.size() - 1;
        c = &s.cgroups.back();
      } else {
        c = &unknown;
        have_unknown = true;
      }
      ScanDetail& d = c->detail;
      for (size_t x = 0; x < kReclaimContexts; ++x) {
        for (size_t l = 0; l < kLruTypes; ++l) {
          for (size_t li = 0; li < kLruLists; ++li) {
            d.isolate[x][l][li].scanned_pages += v.isolate[x][l][li].scanned;
            d.isolate[x][l][li].taken_pages += v.isolate[x][l][li].taken;
          }
          d.active[x][l].taken_pages += v.active[x][l].taken;
          d.active[x][l].deactivated_pages += v.active[x][l].deactivated;
        }
        d.slab[x].calls += v.slab[x].calls;
        d.slab[x].freed_objects += v.slab[x].freed;
        d.slab[x].ns += v.slab[x].ns;
      }
    }
  }
  if (have_unknown) s.cgroups.push_back(std::move(unknown));
  std::erase_if(m.paths, [&](const auto& kv) { return live_ids.count(kv.first) == 0; });
  m.missing.clear();

  // Begins open longer than the tracefs backend's bound, counted once each:
  // the tasks with state, listed by the program's task iterator.
  const uint64_t now = monoNs();
  std::set<std::tuple<uint32_t, int, uint64_t>> still;
  uint64_t tasks = 0;
  const std::vector<mt_task_row> task_rows = m.taskRows();
  for (const mt_task_row& t : task_rows) {
    ++tasks;
    const uint32_t tid = t.tid;
    for (int i = 0; i < MT_PAIRED_KINDS; ++i) {
      const uint64_t b = t.begin_ts[i];
      if (b == 0 || now < b || now - b < kUnpairedBoundNs) continue;
      auto key = std::make_tuple(tid, i, b);
      still.insert(key);
      if (m.overdue.count(key)) continue;
      size_t kind = static_cast<size_t>(i);
      if (i == 1 && m.reclaimers.count(static_cast<int32_t>(tid)))
        kind = static_cast<size_t>(ReclaimKind::kProactive);
      ++m.overdue_count[kind];
    }
  }
  m.overdue = std::move(still);
  for (size_t k = 0; k < kReclaimKinds; ++k)
    s.aggregator.unpaired[k][static_cast<size_t>(UnpairedReason::kBeginOpenTooLong)] =
        m.overdue_count[k];
  s.aggregator.pid_cache_entries = tasks;

  // The report's rows: the live tasks' from the iterator (read first), then
  // the exited ones drained now. A task that exited in between is in both:
  // its exited row (final) is the one kept.
  m.drained.clear();
  m.drainExited();
  std::vector<ProcessTraceStats> live;
  ProcessTraceStats past_cap;  // live tasks beyond max_processes
  for (const mt_task_row& t : task_rows) {
    if (!(t.rep.flags & MT_ROW_ACTIVE) || (t.rep.flags & MT_ROW_EXITED)) continue;
    if (m.drained.count(static_cast<int32_t>(t.tid))) continue;
    ProcessTraceStats p = toProcessRow(t);
    if (live.size() >= m.opts.max_processes) {
      addReportRow(past_cap, p);
      continue;
    }
    p.cgroup = m.labelOf(t.rep.cg_id);
    live.push_back(std::move(p));
  }
  m.drained.clear();
  s.processes = std::move(live);
  m.exited_rows->copyExitedTo(s.processes);  // ends with "other"
  {
    ProcessTraceStats& other = s.processes.back();
    addReportRow(other, past_cap);
    mt_task_row k{};
    const uint32_t okey = MT_OTHER_TID;
    if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.exited), &okey, &k) == 0)
      addReportRow(other, toProcessRow(k));
  }

  m.sizes.clear();
  m.sizes.push_back({"cgroups", cgroup_keys, bpf_map__max_entries(m.skel->maps.cgroups),
                     n.overflow_events});
  m.sizes.push_back({"tasks", tasks, m.pid_max, n.task_map_full});
  m.sizes.push_back({"exited", m.exited_entries, bpf_map__max_entries(m.skel->maps.exited),
                     n.exited_full});
  if (m.opts.lru_detail || m.opts.shrink_slab)  // (its overflow counted with cgroups')
    m.sizes.push_back({"details", detail_keys, bpf_map__max_entries(m.skel->maps.details), 0});
  if (m.opts.exit_cgroups) {
    // Only the LRU evicts (nothing deletes): what it added and no longer
    // holds was evicted. Read after `n`: a few exits may land in between.
    const uint64_t held = countEntries(m.skel->maps.exit_cgroups);
    m.sizes.push_back({"exit_cgroups", held, bpf_map__max_entries(m.skel->maps.exit_cgroups),
                       n.exit_cgroups_added > held ? n.exit_cgroups_added - held : 0});
  }

  if (m.opts.locks) {
    LockSnapshot& L = s.locks;
    L.enabled = true;
    L.unpaired_ends = n.lock_unpaired_ends;
    L.nested_begins = n.lock_nested_begins;
    L.rstat_unpaired = n.rstat_unpaired;
    std::map<std::string, LockCgroupSeries> by_label;
    auto labelOf = [&](uint64_t id) -> std::string {
      auto p = m.pathOf(id);
      return p ? *p : std::string("_unknown");
    };
    const int lw_fd = bpf_map__fd(m.skel->maps.lock_waits);
    const auto lw_keys = keysOf<mt_lock_key>(m.skel->maps.lock_waits);
    m.sizes.push_back({"lock_waits", lw_keys.size(),
                       bpf_map__max_entries(m.skel->maps.lock_waits), n.lock_map_full});
    for (const mt_lock_key& k : lw_keys) {
      // A series of a removed cgroup (its reclaim series is gone): dropped.
      if (k.cg_id != MT_NODE_ID && live_ids.count(k.cg_id) == 0) {
        bpf_map_delete_elem(lw_fd, &k);
        continue;
      }
      mt_lock_wait w{};
      if (!lookupPerCpu(lw_fd, k, ncpus, w)) continue;
      LockHistogram h;
      toHist(w.wait, h);
      LockKindArray* arr = &L.node;
      if (k.cg_id != MT_NODE_ID) {
        std::string label = k.cg_id == MT_OVERFLOW_ID ? "_overflow" : labelOf(k.cg_id);
        auto& series = by_label[label];
        series.label = label;
        arr = &series.contention;
      }
      LockKindStats& ks = (*arr)[static_cast<size_t>(lockKindFromFlags(k.flags))];
      ks.count += w.wait.count;
      ks.aborted += w.aborted;
      ks.wait.merge(h);
    }
    const int rs_fd = bpf_map__fd(m.skel->maps.rstat);
    const auto rs_keys = keysOf<uint64_t>(m.skel->maps.rstat);
    // (refusals of rstat and lock_waits are counted together, on lock_waits)
    m.sizes.push_back({"rstat", rs_keys.size(), bpf_map__max_entries(m.skel->maps.rstat), 0});
    for (uint64_t id : rs_keys) {
      mt_rstat r{};
      if (!lookupPerCpu(rs_fd, id, ncpus, r)) continue;
      std::string label = labelOf(id);
      auto& series = by_label[label];
      series.label = label;
      series.rstat.contended += r.contended;
      series.rstat.flushes += r.flushes;
      series.rstat.flushes_skipped += r.flushes_skipped;
      LockHistogram wait, hold;
      toHist(r.wait, wait);
      toHist(r.hold, hold);
      series.rstat.wait.merge(wait);
      series.rstat.hold.merge(hold);
    }
    for (auto& [label, series] : by_label) L.cgroups.push_back(std::move(series));

    // Top locks by wait time (lock_stats.cpp's ranking). More than half the
    // map in use: the lighter half is moved out (read and deleted at once)
    // into "other", as the tracefs backend prunes its own table.
    const int la_fd = bpf_map__fd(m.skel->maps.lock_addrs);
    const auto la_keys = keysOf<uint64_t>(m.skel->maps.lock_addrs);
    std::map<uint64_t, TopLock> by_addr;  // the rescue twins' keys (| 1, | 2) merged in
    TopLock other = m.other_locks;
    for (uint64_t key : la_keys) {
      mt_lock_addr a{};
      if (!lookupPerCpu(la_fd, key, ncpus, a)) continue;
      const uint64_t addr = key & ~MT_RESCUE_BITS;
      if (addr == MT_OTHER_LOCK) {
        other.count += a.count;
        other.wait_ns += a.wait_ns;
        continue;
      }
      TopLock& t = by_addr[addr];
      if (t.count == 0 && !(key & MT_RESCUE_BITS)) t.kind = lockKindFromFlags(a.flags);
      t.addr = addr;
      t.count += a.count;
      t.wait_ns += a.wait_ns;
    }
    std::vector<TopLock> all;
    all.reserve(by_addr.size());
    for (auto& [addr, t] : by_addr) all.push_back(t);
    std::sort(all.begin(), all.end(), [](const TopLock& a, const TopLock& b) {
      return a.wait_ns != b.wait_ns ? a.wait_ns > b.wait_ns : a.addr < b.addr;
    });
    const size_t max_addrs = m.opts.max_lock_addrs;
    if (all.size() > max_addrs / 2) {
      const size_t keep = max_addrs / 4;
      std::vector<uint8_t> raw = perCpuBuffer<mt_lock_addr>(ncpus);
      for (size_t i = keep; i < all.size(); ++i) {
        for (uint64_t key = all[i].addr; key <= (all[i].addr | MT_TWINS); ++key) {
          // The value as deleted (with the adds since the walk above).
          if (bpf_map_lookup_and_delete_elem(la_fd, &key, raw.data()) != 0) continue;
          const mt_lock_addr a = sumPerCpu<mt_lock_addr>(raw, ncpus);
          m.other_locks.count += a.count;
          m.other_locks.wait_ns += a.wait_ns;
          other.count += a.count;
          other.wait_ns += a.wait_ns;
        }
      }
      all.resize(keep);
    }
    for (size_t i = 0; i < all.size(); ++i) {
      if (i < kTopLocks) {
        L.top_locks.push_back(all[i]);
      } else {
        other.count += all[i].count;
        other.wait_ns += all[i].wait_ns;
      }
    }
    other.addr = 0;
    L.other_locks = other;
    m.sizes.push_back({"lock_addrs", la_keys.size(), bpf_map__max_entries(m.skel->maps.lock_addrs),
                       n.lock_addrs_full});
    if (m.callers) m.readCallers(L, n);
  }
  m.cpu_ns += threadCpuNs() - cpu0;
  s.reader_cpu_ns = m.cpu_ns;
  return s;
}

uint64_t BpfTracer::contentionEnds() const { return impl_->nodeStats().lock_ends; }
BpfTracer::Misses BpfTracer::misses() const { return impl_->misses(); }

SnapshotHistory& BpfTracer::reportHistory() { return impl_->history; }
const Kallsyms* BpfTracer::kallsyms() {
  return impl_->kallsyms.get(impl_->opts.procfs + "/kallsyms");
}
LockIds& BpfTracer::lockIds() { return impl_->lock_ids; }
bool BpfTracer::lockAddresses() const { return impl_->opts.lock_addresses; }

std::vector<MapSize> BpfTracer::mapSizes() const {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    if (!impl_->sizes.empty()) return impl_->sizes;
  }
  (void)snapshot();  // before the first snapshot: read the maps once
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->sizes;
}

std::optional<PidCgroup> BpfTracer::cgroupOf(int32_t pid) const {
  const Impl& m = *impl_;
  if (!m.opts.exit_cgroups || pid <= 0) return std::nullopt;
  uint64_t id = 0;
  bool exited = false;
  mt_exit_cgroup e{};
  const uint32_t key = static_cast<uint32_t>(pid);
  const uint64_t now = monoNs();
  if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.exit_cgroups), &key, &e) == 0 &&
      e.exit_ns <= now && now - e.exit_ns <= kRecentExitNs) {
    id = e.cg_id;
    exited = true;
  } else {
    // Alive, or between its exit record and its sched_process_exit (the
    // record is sent first), or a zombie: the task itself says.
    id = m.taskMemcg(pid);
  }
  if (id == 0) return std::nullopt;
  std::lock_guard<std::mutex> g(m.mu);
  auto path = m.pathOf(id);
  if (!path) return std::nullopt;
  return PidCgroup{*path, id, exited};
}

void BpfTracer::markReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->reclaimers.insert(tid);
  const uint32_t key = static_cast<uint32_t>(tid);
  const uint8_t one = 1;
  bpf_map_update_elem(bpf_map__fd(impl_->skel->maps.reclaimers), &key, &one, BPF_ANY);
  impl_->skel->bss->nr_reclaimers = static_cast<uint32_t>(impl_->reclaimers.size());
}

void BpfTracer::unmarkReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->reclaimers.erase(tid);
  const uint32_t key = static_cast<uint32_t>(tid);
  bpf_map_delete_elem(bpf_map__fd(impl_->skel->maps.reclaimers), &key);
  bpf_map_delete_elem(bpf_map__fd(impl_->skel->maps.episodes), &key);  // one left open
  impl_->skel->bss->nr_reclaimers = static_cast<uint32_t>(impl_->reclaimers.size());
}

bool BpfTracer::beginEpisode(int32_t tid, std::string_view cgroup) {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (impl_->reclaimers.count(tid) == 0) return false;
  const uint64_t id = impl_->resolver->idOf(std::string(cgroup));
  if (id == 0) return false;
  const uint32_t key = static_cast<uint32_t>(tid);
  return bpf_map_update_elem(bpf_map__fd(impl_->skel->maps.episodes), &key, &id, BPF_ANY) == 0;
}

void BpfTracer::endEpisode(int32_t tid) {
  const uint32_t key = static_cast<uint32_t>(tid);
  bpf_map_delete_elem(bpf_map__fd(impl_->skel->maps.episodes), &key);
}

}  // namespace memcg::tracing::bpf

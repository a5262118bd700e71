#include "tracing/tracefs_session.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "common/log.h"
#include "common/parse.h"
#include "common/file.h"
#include "tracing/tracefs_shim.h"

namespace memcg::tracing {

namespace {

constexpr long kTracefsMagic = 0x74726163;  // include/uapi/linux/magic.h TRACEFS_MAGIC

bool isTracefs(const std::string& path) {
  struct statfs sfs {};
  if (::statfs(path.c_str(), &sfs) != 0) return false;
  return static_cast<long>(sfs.f_type) == kTracefsMagic;
}

bool tracefsSupported() {
  auto fs = readWholeFile("/proc/filesystems");
  return !fs.ok() || fs->find("\ttracefs\n") != std::string::npos;
}

// "overrun: N" etc. from per_cpu/cpuN/stats.
uint64_t parseLost(std::string_view text) {
  uint64_t lost = 0;
  std::string_view line;
  while (nextLine(text, line)) {
    size_t c = line.find(':');
    if (c == std::string_view::npos) continue;
    std::string_view key = line.substr(0, c);
    if (key != "overrun" && key != "commit overrun" && key != "dropped events") continue;
    std::string_view v = line.substr(c + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (auto n = parseU64(trimRight(v))) lost += *n;
  }
  return lost;
}

}  // namespace

struct TracefsSession::Cpu {
  int cpu = 0;
  Fd pipe;
  Fd stats;
  uint64_t lost = 0;  // from stats, last read
  bool dirty = true;  // had data since stats was last read
};

std::string selectedTraceClock(std::string_view text) {
  size_t open = text.find('[');
  if (open == std::string_view::npos) return {};
  size_t close = text.find(']', open);
  if (close == std::string_view::npos) return {};
  return std::string(text.substr(open + 1, close - open - 1));
}

int traceClockId(std::string_view clock) {
  // kernel/trace/trace.c trace_clocks[]: these four are the kernel's
  // *_fast_ns accessors of the clocks clock_gettime() reads.
  if (clock == "mono") return CLOCK_MONOTONIC;
  if (clock == "mono_raw") return CLOCK_MONOTONIC_RAW;
  if (clock == "boot") return CLOCK_BOOTTIME;
  if (clock == "tai") return CLOCK_TAI;
  return -1;
}

Result<std::unique_ptr<TracefsSession>> TracefsSession::open(const SessionOptions& opts) {
  if (!isValidInstanceName(opts.instance_name)) {
    return makeError(EINVAL, opts.instance_name,
                     "instance name must start with memcg_exporter and contain no '/' or spaces");
  }
  std::unique_ptr<TracefsSession> s(new TracefsSession());
  s->opts_ = opts;

  // 1. Find or mount tracefs, then hold its root by a file descriptor and
  // reach everything through /proc/self/fd/N: someone else unmounting the
  // visible path (another exporter that mounted it, an admin) cannot take the
  // instance away from under us or stop us removing it.
  std::vector<std::string> candidates;
  if (!opts.tracefs_path.empty()) {
    candidates.push_back(opts.tracefs_path);
  } else {
    candidates = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
  }
  std::string found;
  for (const auto& c : candidates) {
    if (isTracefs(c)) {
      found = c;
      break;
    }
  }
  if (found.empty()) {
    const std::string target = candidates.front();
    if (!tracefsSupported()) {
      return makeError(ENODEV, target, "kernel has no tracefs (CONFIG_TRACING off?)");
    }
    if (!opts.mount_if_missing) {
      return makeError(ENOENT, target, "tracefs is not mounted (mounting disabled)");
    }
    if (opts.tracefs_path.empty()) {
      // Nobody asked for a place: a detached mount (5.2+) that no other
      // process sees and that goes away with the descriptor, even on a crash.
      int fsfd = ::fsopen("tracefs", FSOPEN_CLOEXEC);
      if (fsfd >= 0) {
        if (::fsconfig(fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0) {
          s->root_fd_.reset(::fsmount(fsfd, FSMOUNT_CLOEXEC, 0));
        }
        ::close(fsfd);
      }
      if (s->root_fd_.valid()) {
        s->mounted_by_us_ = true;
        s->private_mount_ = true;
        found = "tracefs(private mount)";
        log::info("mounted tracefs privately (not visible to other processes)");
      }
    }
    if (!s->root_fd_.valid()) {
      if (::mount("nodev", target.c_str(), "tracefs", 0, nullptr) != 0) {
        return makeError(errno, target,
                         "tracefs is not mounted and mounting it failed "
                         "(needs root/CAP_SYS_ADMIN; or mount it and pass its path)");
      }
      s->mounted_by_us_ = true;
      found = target;
      log::info("mounted tracefs", "path=" + log::quote(target));
    }
  }
  s->display_root_ = found;
  if (!s->root_fd_.valid()) {
    s->root_fd_.reset(::open(found.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!s->root_fd_.valid()) return makeError(errno, found, "open tracefs");
  }
  s->root_ = "/proc/self/fd/" + std::to_string(s->root_fd_.get());

  // 2. Our instance; a leftover of ours (same name) is removed first.
  // inst_path is for the file operations, instance_dir_ for messages.
  const std::string& name = opts.instance_name;
  const std::string inst_path = s->root_ + "/instances/" + name;
  s->instance_dir_ = s->display_root_ + "/instances/" + name;
  // AT_EACCESS: as the effective user with its capabilities (access(2) asks
  // as the real user and, for a non-root one, without capabilities: a
  // non-root exporter with CAP_DAC_OVERRIDE, the systemd unit's, can create it).
  if (::faccessat(AT_FDCWD, (s->root_ + "/instances").c_str(), W_OK, AT_EACCESS) != 0) {
    return makeError(errno == ENOENT ? ENOENT : EACCES, s->display_root_ + "/instances",
                     "cannot create a tracefs instance (needs root)");
  }
  struct stat st {};
  if (::stat(inst_path.c_str(), &st) == 0) {
    log::warn("removing stale tracefs instance", "path=" + log::quote(s->instance_dir_));
    if (memcg_tfs_instance_destroy_by_name(s->root_.c_str(), name.c_str()) != 0) {
      return makeError(errno, s->instance_dir_,
                       errno == EBUSY ? "instance in use (another exporter running?)"
                                      : "cannot remove stale instance");
    }
  }
  int is_new = 0;
  s->instance_ = memcg_tfs_instance_create(s->root_.c_str(), name.c_str(), &is_new);
  if (!s->instance_) return makeError(errno ? errno : EIO, s->instance_dir_, "create instance");
  if (!is_new) {
    memcg_tfs_instance_free(s->instance_);
    s->instance_ = nullptr;
    return makeError(EEXIST, s->instance_dir_, "instance appeared concurrently");
  }
  // From here on the destructor removes the instance on any failure.
  if (memcg_tfs_instance_file_write(s->instance_, "tracing_on", "0") != 0) {
    return makeError(errno, s->instance_dir_ + "/tracing_on", "write 0");
  }
  if (!opts.trace_clock.empty() &&
      memcg_tfs_instance_file_write(s->instance_, "trace_clock", opts.trace_clock.c_str()) != 0) {
    log::warn("cannot set the instance's trace_clock",
              "clock=" + opts.trace_clock + " errno=" + std::to_string(errno));
  }
  // What the kernel uses is what the file marks, whatever was asked.
  if (auto tc = readWholeFile(inst_path + "/trace_clock"); tc.ok()) {
    if (auto sel = selectedTraceClock(*tc); !sel.empty()) s->clock_ = sel;
  }
  s->clock_id_ = traceClockId(s->clock_);
  if (s->clock_id_ < 0) {
    log::warn("trace clock not readable from user space: events of a task that moves "
              "between CPUs may be applied out of order",
              "clock=" + s->clock_);
  }
  if (memcg_tfs_set_buffer_size_kb(s->instance_, opts.buffer_kb_per_cpu) != 0) {
    return makeError(errno, s->instance_dir_ + "/buffer_size_kb", "set buffer size");
  }
  if (opts.subbuf_kb > 0 && ::faccessat(AT_FDCWD, (inst_path + "/buffer_subbuf_size_kb").c_str(),
                                         W_OK, AT_EACCESS) == 0) {
    // Best effort: a kernel that refuses keeps its size, read back below.
    if (memcg_tfs_instance_file_write(s->instance_, "buffer_subbuf_size_kb",
                                      std::to_string(opts.subbuf_kb).c_str()) != 0) {
      log::info("tracefs sub-buffer size kept", "asked_kb=" + std::to_string(opts.subbuf_kb));
    }
  }
  s->subbuf_size_ = static_cast<size_t>(::getpagesize());
  if (auto kb = readWholeFile(inst_path + "/buffer_subbuf_size_kb"); kb.ok()) {
    if (auto v = parseU64(trimRight(*kb)); v && *v > 0) s->subbuf_size_ = *v * 1024;
  }

  // 3. Per-CPU raw pipes, kept open for the session's life.
  const std::string per_cpu = inst_path + "/per_cpu";
  DIR* d = ::opendir(per_cpu.c_str());
  if (!d) return makeError(errno, s->instance_dir_ + "/per_cpu", "opendir");
  std::vector<int> cpu_ids;
  while (dirent* de = ::readdir(d)) {
    if (std::strncmp(de->d_name, "cpu", 3) != 0) continue;
    if (auto n = parseU64(de->d_name + 3)) cpu_ids.push_back(static_cast<int>(*n));
  }
  ::closedir(d);
  std::sort(cpu_ids.begin(), cpu_ids.end());
  s->merger_ = std::make_unique<RecordMerger>(
      s->subbuf_size_, std::max<size_t>(1, opts.max_bytes_per_cpu_round / s->subbuf_size_));
  for (int id : cpu_ids) {
    auto c = std::make_unique<Cpu>();
    c->cpu = id;
    const std::string base = per_cpu + "/cpu" + std::to_string(id);
    const std::string shown = s->instance_dir_ + "/per_cpu/cpu" + std::to_string(id);
    c->pipe.reset(
        ::open((base + "/trace_pipe_raw").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!c->pipe.valid()) {
      if (errno == ENODEV || errno == ENOENT) continue;  // offline CPU
      return makeError(errno, shown + "/trace_pipe_raw", "open");
    }
    c->stats.reset(::open((base + "/stats").c_str(), O_RDONLY | O_CLOEXEC));
    if (!s->merger_->addCpu(id, nullptr)) return makeError(ENOMEM, shown, "kbuffer_alloc");
    s->cpus_.push_back(std::move(c));
  }
  if (s->cpus_.empty()) return makeError(ENOENT, s->instance_dir_ + "/per_cpu", "no readable CPU buffers");
  if (s->opts_.wait == SessionOptions::Wait::kPoll) s->setUpPolling(inst_path);
  return s;
}

void TracefsSession::setUpPolling(const std::string& inst_path) {
  // kPoll needs poll to mean "has data" (tracefs_session.h): buffer_percent
  // 0 and the block option off. A kernel without buffer_percent (< 5.0)
  // always meant that.
  auto fallBack = [this](const std::string& why) {
    log::warn("tracing reader falls back to reading every CPU each interval",
              "why=" + log::quote(why));
    opts_.wait = SessionOptions::Wait::kInterval;
  };
  auto check = [&](const char* file, const char* want) -> bool {
    const std::string path = inst_path + "/" + file;
    if (::access(path.c_str(), F_OK) != 0) return true;  // older kernel: nothing to set
    (void)memcg_tfs_instance_file_write(instance_, file, want);
    auto v = readWholeFile(path);
    if (!v.ok() || trimRight(*v) != want) {
      fallBack(instance_dir_ + "/" + file + " is not " + want);
      return false;
    }
    return true;
  };
  if (!check("buffer_percent", "0") || !check("options/block", "0")) return;
  std::vector<int> fds;
  fds.reserve(cpus_.size());
  for (const auto& c : cpus_) fds.push_back(c->pipe.get());
  auto p = CpuPoller::create(fds);
  if (!p.ok()) {
    fallBack(p.error().message());
    return;
  }
  poller_ = std::make_unique<CpuPoller>(std::move(p.value()));
}

TracefsSession::~TracefsSession() {
  stop();
  cpus_.clear();  // close every per-CPU file, or rmdir fails with EBUSY
  if (instance_) {
    memcg_tfs_instance_file_write(instance_, "tracing_on", "0");
    if (memcg_tfs_instance_destroy(instance_) != 0) {
      log::warn(
          "could not remove tracefs instance",
          "path=" + log::quote(instance_dir_) + " err=" + log::quote(strerror(errno)));
    }
    memcg_tfs_instance_free(instance_);
    instance_ = nullptr;
  }
  // A private mount goes with its descriptor; a visible one is unmounted.
  root_fd_.reset();
  if (mounted_by_us_ && !private_mount_) {
    if (::umount2(display_root_.c_str(), MNT_DETACH) != 0) {
      log::warn("could not unmount tracefs", "path=" + log::quote(display_root_));
    }
  }
}

Status TracefsSession::enableEvent(const char* system, const char* event,
                                   const std::string& filter) {
  const std::string path = instance_dir_ + "/events/" + system + "/" + event;
  if (!filter.empty() && memcg_tfs_event_file_write(instance_, system, event, "filter",
                                                    filter.c_str()) != 0) {
    return makeError(errno, path + "/filter", filter);
  }
  if (memcg_tfs_event_enable(instance_, system, event) != 0) {
    return makeError(errno ? errno : ENOENT, path + "/enable", "enable");
  }
  return Ok{};
}

Status TracefsSession::writeEventFile(const char* system, const char* event,
                                      const char* file, const std::string& value) {
  if (memcg_tfs_event_file_write(instance_, system, event, file, value.c_str()) != 0) {
    return makeError(errno ? errno : EIO,
                     instance_dir_ + "/events/" + system + "/" + event + "/" + file, value);
  }
  return Ok{};
}

Status TracefsSession::start(RecordSink* sink) {
  if (running_.load()) return makeError(EALREADY, instance_dir_, "already running");
  sink_ = sink;
  if (memcg_tfs_instance_file_write(instance_, "tracing_on", "1") != 0) {
    return makeError(errno, instance_dir_ + "/tracing_on", "write 1");
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_requested_ = false;
  }
  if (poller_) poller_->clearWake();
  running_.store(true);
  thread_ = std::thread([this] { run(); });
  // For people (top -H, /proc/<pid>/task/*/comm) and the idle-cost bench.
  (void)pthread_setname_np(thread_.native_handle(), "memcg-trace");
  return Ok{};
}

void TracefsSession::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  if (poller_) poller_->wake();
  if (thread_.joinable()) thread_.join();
  running_.store(false);
}

SessionStats TracefsSession::stats() const {
  SessionStats s;
  s.records = records_.load(std::memory_order_relaxed);
  s.subbufs = subbufs_.load(std::memory_order_relaxed);
  s.lost = lost_.load(std::memory_order_relaxed);
  s.missed_flags = missed_.load(std::memory_order_relaxed);
  s.read_errors = read_errors_.load(std::memory_order_relaxed);
  s.reads_failing = reads_failing_.load(std::memory_order_relaxed);
  s.rounds = rounds_.load(std::memory_order_relaxed);
  s.reader_cpu_ns = reader_cpu_ns_.load(std::memory_order_relaxed);
  s.out_of_order = out_of_order_.load(std::memory_order_relaxed);
  s.held = held_.load(std::memory_order_relaxed);
  s.syscalls = syscalls_.load(std::memory_order_relaxed);
  s.cpu_reads = cpu_reads_.load(std::memory_order_relaxed);
  return s;
}

void TracefsSession::refreshLost(bool all) {
  uint64_t lost = 0;
  char buf[1024];
  for (auto& c : cpus_) {
    if (c->stats.valid() && (all || c->dirty)) {
      ++own_syscalls_;
      ssize_t n = ::pread(c->stats.get(), buf, sizeof buf - 1, 0);
      if (n > 0) c->lost = parseLost(std::string_view(buf, static_cast<size_t>(n)));
      c->dirty = false;
    }
    lost += c->lost;
  }
  lost_.store(lost, std::memory_order_relaxed);
}

bool TracefsSession::waitStop(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lk(mu_);
  if (stop_requested_) return true;
  ++own_syscalls_;  // a futex wait
  return cv_.wait_for(lk, d, [this] { return stop_requested_; });
}

void TracefsSession::run() {
  auto last_stats = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  for (;;) {
    bool stopping;
    {
      std::lock_guard<std::mutex> g(mu_);
      stopping = stop_requested_;
    }
    bool more = drainRound(stopping);
    if (stopping) {
      // Whatever the kernel still has (bounded: its buffers are finite),
      // then everything read, held back or not.
      for (int i = 0; more && i < 16; ++i) more = drainRound(true);
      flushAll();
    }
    auto now = std::chrono::steady_clock::now();
    if (stopping || now - last_stats >= std::chrono::seconds(1)) {
      // kInterval reads every CPU's stats (as the older loop did).
      refreshLost(stopping || !poller_);
      last_stats = now;
    }
    struct timespec cpu {};
    ++own_syscalls_;  // the thread CPU clock is not in the vDSO
    if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
      reader_cpu_ns_.store(static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000ull +
                               static_cast<uint64_t>(cpu.tv_nsec),
                           std::memory_order_relaxed);
    }
    syscalls_.store(own_syscalls_ + (poller_ ? poller_->syscalls() : 0),
                    std::memory_order_relaxed);
    cpu_reads_.store(cpu_reads_local_, std::memory_order_relaxed);
    if (stopping) break;
    last_round_end_ = std::chrono::steady_clock::now();
    if (more) continue;  // a CPU hit max_bytes_per_cpu_round: go on at once
    waitForRound();
  }
}

void TracefsSession::waitForRound() {
  // Rounds at least poll_interval apart (from the end of one to the start of
  // the next), in both modes.
  auto gapLeft = [this] {
    const auto left =
        last_round_end_ + opts_.poll_interval - std::chrono::steady_clock::now();
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::ceil<std::chrono::milliseconds>(left));
  };
  // kInterval: every CPU, every interval. Records held back by the last
  // round: past its watermark after the gap, read then.
  if (!poller_ || held_.load(std::memory_order_relaxed) > 0) {
    (void)waitStop(gapLeft());
    return;
  }
  // Sleep until an event (at once on a busy host), idle_wake or stop.
  const CpuPoller::Wake w = poller_->wait(opts_.idle_wake);
  if (w == CpuPoller::Wake::kWoken) return;
  // After an event, also until it is past the watermark (so that the round
  // hands it out instead of holding it back for the next one).
  const auto slack = std::chrono::ceil<std::chrono::milliseconds>(opts_.commit_slack);
  const auto left = gapLeft();
  const auto d = w == CpuPoller::Wake::kData ? std::max(left, slack) : left;
  if (d.count() > 0) (void)waitStop(d);
}

bool TracefsSession::drainRound(bool final_round) {
  // The watermark first, before any CPU is read (tracefs_session.h).
  uint64_t watermark = std::numeric_limits<uint64_t>::max();
  if (!final_round && clock_id_ >= 0) {
    struct timespec now {};
    if (::clock_gettime(static_cast<clockid_t>(clock_id_), &now) == 0) {
      const uint64_t t0 = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull +
                          static_cast<uint64_t>(now.tv_nsec);
      const uint64_t slack =
          static_cast<uint64_t>(std::chrono::nanoseconds(opts_.commit_slack).count());
      watermark = t0 > slack ? t0 - slack : 0;
    }
  }
  // Which CPUs to read: kPoll asks the kernel which hold data now, after
  // the watermark was taken; one it reports empty was empty after T0, which
  // is all a read ending in EAGAIN proves (tracefs_session.h).
  if (final_round || !poller_) {
    ready_.assign(cpus_.size(), 1);
  } else {
    poller_->ready(ready_);
  }
  bool more = false;
  const uint64_t errors_before = read_errors_.load(std::memory_order_relaxed);
  RecordMerger& m = *merger_;
  for (size_t i = 0; i < cpus_.size(); ++i) {
    Cpu& c = *cpus_[i];
    if (!ready_[i]) {
      m.setDrained(i, true);
      continue;
    }
    bool drained = false;
    bool after_partial = false;
    for (;;) {
      char* dst = m.reserve(i);
      if (!dst) {  // this round's share read: go on at once
        more = true;
        break;
      }
      ++own_syscalls_;
      ++cpu_reads_local_;
      ssize_t n = ::read(c.pipe.get(), dst, subbuf_size_);
      if (n < 0) {
        if (errno == EINTR) continue;
        // EAGAIN: nothing more committed. Another error: counted, and the
        // CPU taken as drained so that it cannot hold the others back.
        if (errno != EAGAIN &&
            read_errors_.fetch_add(1, std::memory_order_relaxed) == 0) {
          // Once: memcg_trace_read_errors_total counts the rest.
          log::warn("tracefs read failed; that CPU's events are skipped this round",
                    "path=" +
                        log::quote(instance_dir_ + "/per_cpu/cpu" +
                                   std::to_string(c.cpu) + "/trace_pipe_raw") +
                        " err=" + log::quote(strerror(errno)));
        }
        drained = true;
        break;
      }
      if (n == 0) {
        drained = true;
        break;
      }
      c.dirty = true;
      RecordMerger::PageInfo info = m.commit(i, static_cast<size_t>(n));
      if (!info.ok) {
        read_errors_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (info.missed != 0)
        missed_.fetch_add(info.missed > 0 ? info.missed : 1, std::memory_order_relaxed);
      // A sub-buffer far from full is the one the writer is on: read once
      // more (EAGAIN proves the CPU drained) but do not chase the writer;
      // a CPU left with data bounds the watermark by its newest record.
      if (after_partial) break;
      if (!final_round && info.partial) after_partial = true;
    }
    m.setDrained(i, drained);
  }
  reads_failing_.store(read_errors_.load(std::memory_order_relaxed) != errors_before,
                       std::memory_order_relaxed);
  subbufs_.store(m.subbufs(), std::memory_order_relaxed);
  const uint64_t n = m.emit(watermark, sink_);
  records_.fetch_add(n, std::memory_order_relaxed);
  rounds_.fetch_add(1, std::memory_order_relaxed);
  out_of_order_.store(m.outOfOrder(), std::memory_order_relaxed);
  held_.store(m.held(), std::memory_order_relaxed);
  if (sink_) sink_->onRoundEnd();
  m.compact();  // after the sink is done: records point into the merger's pages
  return more;
}

void TracefsSession::flushAll() {
  RecordMerger& m = *merger_;
  for (size_t i = 0; i < m.cpuCount(); ++i) m.setDrained(i, true);
  const uint64_t n = m.emit(std::numeric_limits<uint64_t>::max(), sink_);
  records_.fetch_add(n, std::memory_order_relaxed);
  out_of_order_.store(m.outOfOrder(), std::memory_order_relaxed);
  if (sink_) sink_->onRoundEnd();
  m.compact();
}

}  // namespace memcg::tracing

// memcg_trace_raw_dump: the qemu lane's probe of the tracer's reader
// (tests/qemu/guest/test_20_tracing.sh). It opens a tracefs instance of its
// own through TracefsSession (the exporter's reader: sub-buffers, kbuffer,
// the cross-CPU merge), enables the events the exporter enables by default,
// reads one round and then waits; once the file named by --until exists it
// copies the instance's text (the kernel's decoding of the same buffer, not
// consumed) to --text, drains the buffer through the reader and writes every
// record as "cpu ts_ns common_type common_pid" to --raw. The guest then
// compares the two record by record: same stamps, so any difference is the
// reader's.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/file.h"
#include "tracing/tracefs_session.h"

namespace {

using memcg::tracing::RecordSink;
using memcg::tracing::SessionOptions;
using memcg::tracing::TracefsSession;

class DumpSink : public RecordSink {
 public:
  explicit DumpSink(FILE* out) : out_(out) {}
  void onRecord(const void* data, uint32_t size, uint64_t ts, int cpu) override {
    uint16_t type = 0;
    int32_t pid = 0;
    if (size >= 8) {
      std::memcpy(&type, data, 2);
      std::memcpy(&pid, static_cast<const char*>(data) + 4, 4);
    }
    std::fprintf(out_, "%d %" PRIu64 " %u %d\n", cpu, ts, type, pid);
  }
  void onRoundEnd() override {}

 private:
  FILE* out_;
};

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string instance, until, text_path, raw_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--instance") instance = argv[i + 1];
    else if (k == "--until") until = argv[i + 1];
    else if (k == "--text") text_path = argv[i + 1];
    else if (k == "--raw") raw_path = argv[i + 1];
  }
  if (instance.empty() || until.empty() || text_path.empty() || raw_path.empty()) {
    std::fprintf(stderr,
                 "usage: %s --instance memcg_exporter_NAME --until FILE --text OUT --raw OUT\n",
                 argv[0]);
    return 2;
  }
  SessionOptions opts;
  opts.instance_name = instance;
  opts.poll_interval = std::chrono::hours(1);  // one round at start, then only stop()
  auto s = TracefsSession::open(opts);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.error().message().c_str());
    return 1;
  }
  TracefsSession& session = **s;
  // The exporter's default set (tracing/tracer.cpp), so that the buffer sees
  // the same mix (filtered events, nesting) as the exporter's.
  struct E {
    const char* sys;
    const char* ev;
    const char* filter;
  };
  const E events[] = {
      {"vmscan", "mm_vmscan_direct_reclaim_begin", ""},
      {"vmscan", "mm_vmscan_direct_reclaim_end", ""},
      {"vmscan", "mm_vmscan_memcg_reclaim_begin", ""},
      {"vmscan", "mm_vmscan_memcg_reclaim_end", ""},
      {"vmscan", "mm_vmscan_memcg_softlimit_reclaim_begin", ""},
      {"vmscan", "mm_vmscan_memcg_softlimit_reclaim_end", ""},
      {"vmscan", "mm_vmscan_lru_shrink_inactive", ""},
      {"vmscan", "mm_vmscan_wakeup_kswapd", ""},
      {"vmscan", "mm_vmscan_kswapd_wake", ""},
      {"vmscan", "mm_vmscan_kswapd_sleep", ""},
      {"vmscan", "mm_vmscan_write_folio", ""},
      {"vmscan", "mm_vmscan_writepage", ""},
      {"vmscan", "mm_vmscan_throttled", ""},
      {"sched", "sched_process_fork", ""},
      {"sched", "sched_process_exit", ""},
      {"cgroup", "cgroup_attach_task", "dst_root==0"},
      {"cgroup", "cgroup_rmdir", "root==0"},
  };
  for (const E& e : events) {
    if (!session.enableEvent(e.sys, e.ev, e.filter).ok()) {
      std::fprintf(stderr, "not enabled: %s/%s\n", e.sys, e.ev);
    }
  }
  FILE* raw = std::fopen(raw_path.c_str(), "w");
  if (!raw) {
    std::perror(raw_path.c_str());
    return 1;
  }
  DumpSink sink(raw);
  if (auto st = session.start(&sink); !st.ok()) {
    std::fprintf(stderr, "start: %s\n", st.error().message().c_str());
    return 1;
  }
  while (session.stats().rounds == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::fprintf(raw, "# first round done: %" PRIu64 " records\n", session.stats().records);
  std::printf("ready clock=%s\n", session.traceClock().c_str());
  std::fflush(stdout);
  while (!exists(until)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t rounds = session.stats().rounds;
  auto text = memcg::readWholeFile(session.tracefsRoot() + "/instances/" + instance + "/trace");
  if (!text.ok()) {
    std::fprintf(stderr, "read trace: %s\n", text.error().message().c_str());
    return 1;
  }
  FILE* tf = std::fopen(text_path.c_str(), "w");
  if (!tf || std::fwrite(text->data(), 1, text->size(), tf) != text->size() ||
      std::fclose(tf) != 0) {
    std::perror(text_path.c_str());
    return 1;
  }
  session.stop();
  const auto st = session.stats();
  std::fprintf(raw, "# rounds during the wait %" PRIu64 ", records %" PRIu64
               ", lost %" PRIu64 ", out_of_order %" PRIu64 "\n",
               rounds - 1, st.records, st.lost, st.out_of_order);
  std::fclose(raw);
  std::printf("done records=%" PRIu64 " lost=%" PRIu64 "\n", st.records, st.lost);
  return 0;
}

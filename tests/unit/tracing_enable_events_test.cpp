// Fault: the kernel refusing an event enable. enableEvents()
// (tracing/tracer.h) on the committed 6.18 format files with a fault
// injector in place of the instance's enable files: a refused event is
// reported (memcg_trace_event_enabled 0, one log line naming it and the
// errno), the others are enabled with their filters, and the collector's
// exposition says which is which. No root, no tracefs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "metrics/text_format.h"
#include "tests/support/trace_records.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracer.h"

namespace memcg::tracing {
namespace {

class EnableEventsTest : public memcg::testing::FormatFixtureTest {
 protected:
  EnableEventsTest() : FormatFixtureTest(MEMCG_TRACEFS_FIXTURES) {}

  struct Write {
    std::string event, filter;
  };
  /// The injector: refuses the events in `refuse` with `err`, records the rest.
  EnableEventFn injector(std::vector<std::string> refuse, int err) {
    return [this, refuse, err](const char* sys, const char* ev,
                               const std::string& filter) -> Status {
      const std::string name = std::string(sys) + ":" + ev;
      if (std::find(refuse.begin(), refuse.end(), name) != refuse.end()) {
        return makeError(err,
                         "instances/x/events/" + std::string(sys) + "/" + ev + "/enable",
                         "enable");
      }
      writes_.push_back({name, filter});
      return Ok{};
    };
  }
  static std::vector<EventType> defaults() {
    TracerOptions o;
    std::vector<EventType> want;
    for (const auto& e : kEventNames) {
      if (!scanEventWanted(e.type, o) || isLockEvent(e.type)) continue;
      want.push_back(e.type);
    }
    return want;
  }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; ++p) ++n;
    return n;
  }
  std::vector<Write> writes_;
};

TEST_F(EnableEventsTest, ARefusedEventIsReportedAndTheRestAreTraced) {
  const std::vector<EventType> want = defaults();
  ASSERT_GT(want.size(), 5u);
  ::testing::internal::CaptureStderr();
  EventEnableResult r = enableEvents(
      want, *dec_, *formats_, 3,
      injector({"vmscan:mm_vmscan_write_folio", "cgroup:cgroup_attach_task"}, EINVAL));
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::printf("wanted %zu, enabled %zu, refused %zu\n", want.size(), r.enabled.size(),
              r.refused.size());
  ASSERT_EQ(r.refused.size(), 2u);
  EXPECT_EQ(r.refused[0].first, EventType::kWriteFolio);  // kEventNames' order
  EXPECT_EQ(r.refused[1].first, EventType::kCgroupAttach);
  EXPECT_EQ(r.refused[0].second.err, EINVAL);
  EXPECT_EQ(r.enabled.size(), want.size() - 2);
  EXPECT_EQ(writes_.size(), want.size() - 2) << "every other event was still enabled";
  for (EventType t : r.enabled) {
    EXPECT_NE(t, EventType::kWriteFolio);
    EXPECT_NE(t, EventType::kCgroupAttach);
  }
  // Filters still go with their events (cgroup_rmdir, filtered to the hierarchy).
  auto rmdir = std::find_if(writes_.begin(), writes_.end(), [](const Write& w) {
    return w.event == "cgroup:cgroup_rmdir";
  });
  ASSERT_NE(rmdir, writes_.end());
  EXPECT_EQ(rmdir->filter, "root==3");
  // One log line per refused event, with its name and the errno.
  EXPECT_EQ(count(log, "tracepoint enable refused"), 2u) << log;
  EXPECT_NE(log.find("event=vmscan:mm_vmscan_write_folio"), std::string::npos) << log;
  EXPECT_NE(log.find("Invalid argument"), std::string::npos) << log;

  // The collector's view of it.
  TraceSnapshot s;
  s.running = true;
  s.events_enabled = r.enabled;
  for (const auto& [t, e] : r.refused) s.events_refused.push_back(t);
  metrics::Sink sink;
  renderTraceSnapshot(s, sink, nullptr);
  std::string text;
  metrics::writeText(sink.families(), text);
  EXPECT_NE(
      text.find("memcg_trace_event_enabled{event=\"vmscan:mm_vmscan_write_folio\"} 0\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("memcg_trace_event_enabled{event=\"cgroup:cgroup_attach_task\"} 0\n"),
      std::string::npos);
  EXPECT_NE(text.find("memcg_trace_event_enabled{event=\"vmscan:mm_vmscan_memcg_reclaim_"
                      "begin\"} 1\n"),
            std::string::npos);
  size_t ones = 0, zeros = 0;
  for (size_t p = 0;
       (p = text.find("\nmemcg_trace_event_enabled{", p)) != std::string::npos; ++p) {
    const std::string line = text.substr(p + 1, text.find('\n', p + 1) - p - 1);
    (line.ends_with("} 1") ? ones : zeros) += 1;
  }
  EXPECT_EQ(ones, want.size() - 2);
  EXPECT_EQ(zeros, 2u) << "only the refused ones are 0";
  EXPECT_NE(text.find("memcg_trace_up 1\n"), std::string::npos);
}

TEST_F(EnableEventsTest, EveryEventRefusedEnablesNothing) {
  const std::vector<EventType> want = {EventType::kMemcgReclaimBegin,
                                       EventType::kMemcgReclaimEnd};
  ::testing::internal::CaptureStderr();
  EventEnableResult r = enableEvents(want, *dec_, *formats_, 0,
                                     injector({"vmscan:mm_vmscan_memcg_reclaim_begin",
                                               "vmscan:mm_vmscan_memcg_reclaim_end"},
                                              EBUSY));
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r.enabled.empty());
  ASSERT_EQ(r.refused.size(), 2u);
  EXPECT_EQ(r.refused[1].second.err, EBUSY);
  EXPECT_TRUE(writes_.empty());
}

}  // namespace
}  // namespace memcg::tracing

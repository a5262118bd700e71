// The narrow face tracing shows to the parts that cause reclaim themselves
// (the controller) or need to know which cgroup a task was in (taskstats):
// the composition root hands them this interface, never the Tracer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::tracing {

/// Reclaim the exporter causes on purpose (controller limit nudges,
/// memory.reclaim writes) is traced under the writing thread's tid. Marking
/// that thread tells the tracer to count its reclaim as kind="proactive",
/// and an episode charges it to the cgroup being protected.
class ReclaimAttribution {
 public:
  virtual ~ReclaimAttribution() = default;
  /// `tid` reclaims on purpose from now on (until unmarkReclaimer).
  virtual void markReclaimer(int32_t tid) = 0;
  virtual void unmarkReclaimer(int32_t tid) = 0;
  /// Reclaim by `tid` from now until endEpisode is charged to `cgroup`
  /// (label, "/a/b"). False if the cgroup is unknown to the tracer.
  virtual bool beginEpisode(int32_t tid, std::string_view cgroup) = 0;
  virtual void endEpisode(int32_t tid) = 0;
};

}  // namespace memcg::tracing

#include "tracing/proactive_episodes.h"

#include <time.h>

#include <algorithm>
#include <limits>

namespace memcg::tracing {

namespace {
constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();
}

bool ProactiveEpisodes::begin(int32_t tid, uint32_t slot, uint64_t ts) {
  if (!isReclaimer(tid)) return false;
  if (episodes_.size() >= kMaxEpisodes) episodes_.erase(episodes_.begin());
  episodes_.push_back({tid, slot, ts, kOpen});
  return true;
}

void ProactiveEpisodes::end(int32_t tid, uint64_t ts) {
  for (auto it = episodes_.rbegin(); it != episodes_.rend(); ++it) {
    if (it->tid == tid && it->end_ts == kOpen) {
      it->end_ts = ts;
      break;
    }
  }
}

std::optional<uint32_t> ProactiveEpisodes::targetAt(int32_t tid, uint64_t ts) const {
  for (const Episode& ep : episodes_) {
    if (ep.tid == tid && ts >= ep.begin_ts && ts <= ep.end_ts) return ep.slot;
  }
  return std::nullopt;
}

void ProactiveEpisodes::dropSlot(uint32_t slot) {
  std::erase_if(episodes_, [&](const Episode& ep) { return ep.slot == slot; });
}

uint64_t ProactiveEpisodes::monoNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace memcg::tracing

// The memory_events collector's options and flags (collectors/memory_events.cpp).
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "common/flag_spec.h"

namespace memcg {

struct MemoryEventsOptions {
  /// --collector.memory_events.kmem-tcp: also read v1 memory.kmem.tcp.failcnt
  /// (1 file per cgroup; TCP buffer limits are rarely set, and the reclaim
  /// view does not need it). memory.kmem.failcnt is read either way.
  bool kmemTcp = false;
};

FlagList memoryEventsFlags(MemoryEventsOptions& o);

std::unique_ptr<Collector> makeMemoryEventsCollector(const MemoryEventsOptions& o);

}  // namespace memcg

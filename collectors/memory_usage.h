// The memory_usage collector's options and flags (collectors/memory_usage.cpp).
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "common/flag_spec.h"

namespace memcg {

struct MemoryUsageOptions {
  /// --collector.memory_usage.kmem: also read v1 memory.kmem.* and
  /// memory.kmem.tcp.* usage, peak and limit (6 files per cgroup; the kernel
  /// deprecated them, and kmem is in memory.stat's totals anyway). Their
  /// failcnt files are read by memory_events either way.
  bool kmem = false;
  /// --collector.memory_usage.memsw: also read v1 memory.memsw.{usage,
  /// max_usage,limit}_in_bytes where swap accounting is on (3 files per
  /// cgroup). Off by default: the reclaim view needs only memsw.failcnt
  /// (memory_events), which says when the memory+swap limit binds.
  bool memsw = false;
};

FlagList memoryUsageFlags(MemoryUsageOptions& o);

std::unique_ptr<Collector> makeMemoryUsageCollector(const MemoryUsageOptions& o);

}  // namespace memcg

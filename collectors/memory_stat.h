// The memory_stat collector's options and flags (collectors/memory_stat.cpp).
#pragma once

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "common/flag_spec.h"

namespace memcg {

struct MemoryStatOptions {
  /// --collector.memory_stat.fields: regex on memory.stat keys (whole match);
  /// empty = the default set (README "The memory.stat field set").
  std::string fields;
};

FlagList memoryStatFlags(MemoryStatOptions& o);

std::unique_ptr<Collector> makeMemoryStatCollector(const MemoryStatOptions& o);

}  // namespace memcg

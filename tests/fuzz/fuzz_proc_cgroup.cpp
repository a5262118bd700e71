// /proc/<pid>/cgroup and /proc/cgroups parsing (tracing/cgroup_resolver.h) on
// arbitrary text, for cgroup v2 (hierarchy 0) and v1 hierarchy ids. The path
// returned must be a piece of the input. Seeds: tests/fuzz/seeds/proc_cgroup.
#include "tests/support/fuzz_support.h"
#include "tracing/cgroup_resolver.h"

using namespace memcg;
using namespace memcg::tracing;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  auto h = parseMemoryHierarchyId(in);
  for (int id : {0, 1, 4, h.value_or(7)}) {
    if (auto p = parseProcCgroup(in, id)) {
      FUZZ_CHECK(p->data() >= in.data() &&
                 p->data() + p->size() <= in.data() + in.size());
    }
  }
  return 0;
}

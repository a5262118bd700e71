// The cgroupfs readers, one per file shape (cgroupfs/readers.h):
// single value, value or "max", flat keyed (memory.stat, memory.events),
// nested keyed (memory.pressure, io.stat), and the mountinfo parser
// (cgroupfs/discovery.h), on arbitrary text. Seeds: tests/fixtures/cgroupfs
// and tests/fixtures/procfs.
#include <string_view>

#include "cgroupfs/readers.h"
#include "cgroupfs/discovery.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);

  if (auto v = cgroupfs::parseSingle(in, "memory.usage_in_bytes"); !v.ok()) {
    FUZZ_CHECK(v.error().err == EINVAL);
  }
  if (auto l = cgroupfs::parseLimit(in, "memory.max"); l.ok()) {
    // Unlimited is its own state, never a byte count at or above PAGE_COUNTER_MAX.
    FUZZ_CHECK(l->unlimited || l->bytes < cgroupfs::v1UnlimitedBytes());
    FUZZ_CHECK(!l->unlimited || l->bytes == 0);
  }

  size_t keys = 0;
  Status flat =
      cgroupfs::parseFlatKeyed(in, "memory.stat", [&](std::string_view k, uint64_t) {
        FUZZ_CHECK(!k.empty());
        FUZZ_CHECK(k.find_first_of(" \n") == std::string_view::npos);
        ++keys;
      });
  if (!flat.ok()) FUZZ_CHECK(!flat.error().detail.empty());

  Status nested = cgroupfs::parseNestedKeyed(
      in, "memory.pressure",
      [&](std::string_view line, std::string_view k, std::string_view v) {
        FUZZ_CHECK(!line.empty() && line.find_first_of(" \n") == std::string_view::npos);
        FUZZ_CHECK(!k.empty() && k.find_first_of(" =\n") == std::string_view::npos);
        FUZZ_CHECK(v.find_first_of(" \n") == std::string_view::npos);
        (void)parseU64(v);
      });
  if (!nested.ok()) FUZZ_CHECK(!nested.error().detail.empty());

  if (auto m = parseMountinfo(in, "/proc/self/mountinfo"); m.ok()) {
    for (const auto& e : *m) FUZZ_CHECK(e.mountPoint.size() <= in.size());
  }
  return 0;
}

// The controller journal's reader (controller/journal.h): Journal::open on an
// arbitrary file, as after a crash that left a torn or corrupt journal. It
// runs at every start, also with the controller off: it must load what it can
// and skip the rest, never throw. (Only open() and pending(): a replay would
// write the limits the input names.) Seeds: tests/fuzz/seeds/controller_journal.
#include "controller/journal.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;
using namespace memcg::controller;

namespace {
fuzz::ScratchDir* dir;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  dir = new fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dir->write("journal", fuzz::asText(data, size));
  auto j = Journal::open(dir->path("journal"));
  FUZZ_CHECK(j.ok());
  for (const JournalEntry& e : (*j)->pending()) {
    FUZZ_CHECK(!e.dir.empty() && e.lowered != 0);
  }
  return 0;
}

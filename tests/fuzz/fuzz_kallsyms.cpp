// The /proc/kallsyms parser and symbol lookups (tracing/lock_symbols.h):
// arbitrary text parsed with and without the data-symbol density bound, then
// every address the text names, and its neighbours, symbolised. Seeds:
// tests/fixtures/kallsyms.
#include <charconv>

#include "common/parse.h"
#include "tests/support/fuzz_support.h"
#include "tracing/lock_symbols.h"

using namespace memcg;
using namespace memcg::tracing;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  const Kallsyms dense = Kallsyms::parse(in, 1);
  const Kallsyms normal = Kallsyms::parse(in);
  std::string_view rest = in, line;
  int lookups = 0;
  while (nextLine(rest, line) && lookups < 64) {
    uint64_t a = 0;
    auto r = std::from_chars(line.data(), line.data() + line.size(), a, 16);
    if (r.ec != std::errc()) continue;
    ++lookups;
    for (uint64_t x : {a, a - 1, a + 1, a + Kallsyms::kMaxSymbolSpan}) {
      for (const Kallsyms* k : {&dense, &normal}) {
        // One lookup, two renderings: found by both or by neither.
        FUZZ_CHECK(k->symbolizeText(x).has_value() == k->textName(x).has_value());
        (void)k->symbolizeData(x);
      }
      FUZZ_CHECK(hexAddr(x).starts_with("0x"));
    }
  }
  return 0;
}

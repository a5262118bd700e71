// History chunk decoder (history/chunk.h): any bytes either decode or return
// an error, never crash or read past the end. The input is also read as
// samples, encoded and decoded again: that round trip must be exact (bit for
// bit, NaNs included).
//
// Input: chunk bytes. Seeds: tests/fuzz/seeds/history_chunk.
#include <cstring>
#include <vector>

#include "history/chunk.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<promql::Sample> out;
  auto st = history::decodeChunk(std::span<const uint8_t>(data, size), out);
  FUZZ_CHECK(out.size() <= history::kChunkSamples);
  if (st.ok()) FUZZ_CHECK(out.size() == ((size_t{data[0]} << 8) | data[1]));

  // 16 bytes a sample: a timestamp step and a value.
  history::Chunk c;
  std::vector<promql::Sample> in;
  int64_t t = 0;
  for (size_t off = 0; off + 16 <= size && !c.full(); off += 16) {
    int64_t step;
    double v;
    std::memcpy(&step, data + off, 8);
    std::memcpy(&v, data + off + 8, 8);
    t += 1 + (step & 0xffffffffff);  // ascending
    if (c.append(t, v)) in.push_back({t, v});
  }
  std::vector<promql::Sample> back;
  FUZZ_CHECK(history::decodeChunk(c.bytes(), back).ok());
  FUZZ_CHECK(back.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    FUZZ_CHECK(back[i].t == in[i].t);
    FUZZ_CHECK(std::memcmp(&back[i].v, &in[i].v, 8) == 0);
  }
  return 0;
}

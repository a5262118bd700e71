// A Gorilla-style chunk of float samples, as Prometheus' XOR head chunks:
// timestamps as delta-of-delta in 1/14/17/20/64-bit buckets, values XORed
// with the previous one (same window / new window of leading zeros and
// significant bits). The byte string starts with the sample count (2 bytes,
// big endian), so it decodes by itself; decodeChunk() checks every read
// against the end (it is fuzzed: tests/fuzz/fuzz_history_chunk.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "promql/storage.h"

namespace memcg::history {

inline constexpr uint16_t kChunkSamples = 120;  ///< Prometheus' head chunk size

class Chunk {
 public:
  /// Appends (t must be above maxT() unless empty). False when full.
  bool append(int64_t t, double v);
  uint16_t count() const { return n_; }
  bool full() const { return n_ >= kChunkSamples; }
  int64_t minT() const { return minT_; }
  int64_t maxT() const { return t_; }
  /// The encoded bytes (count header included).
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t byteSize() const { return bytes_.size(); }
  /// Releases the unused capacity (a full chunk).
  void shrink() { bytes_.shrink_to_fit(); }

 private:
  void writeBits(uint64_t v, int bits);
  std::vector<uint8_t> bytes_ = {0, 0};
  int bitPos_ = 0;  // bits used in the last byte (0 = a new byte is needed)
  uint16_t n_ = 0;
  int64_t minT_ = 0, t_ = 0, tDelta_ = 0;
  uint64_t v_ = 0;
  uint8_t leading_ = 0xff, trailing_ = 0;
};

/// Appends the samples of `data` to `out`. Errors (EINVAL, detail says
/// where): truncated or inconsistent data; `out` then holds what decoded.
Status decodeChunk(std::span<const uint8_t> data, std::vector<promql::Sample>& out);

}  // namespace memcg::history

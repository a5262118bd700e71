#include "history/chunk.h"

#include <bit>
#include <cstring>

namespace memcg::history {
namespace {

uint64_t bitsOf(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
double floatOf(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// Zig-zag signed <-> unsigned for the varint deltas.
uint64_t zig(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzig(uint64_t u) {
  return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
}

// The signed dod buckets: width and prefix (prefix bits, prefix length).
struct Bucket {
  int bits;
  uint64_t prefix;
  int prefixLen;
};
constexpr Bucket kBuckets[] = {{14, 0b10, 2}, {17, 0b110, 3}, {20, 0b1110, 4}};

bool fits(int64_t v, int bits) {
  const int64_t lim = int64_t{1} << (bits - 1);
  return v >= -lim && v < lim;
}

class BitReader {
 public:
  explicit BitReader(std::span<const uint8_t> d) : d_(d) {}
  bool read(int bits, uint64_t& out) {
    if (bits == 0) {
      out = 0;
      return true;
    }
    if (pos_ + static_cast<size_t>(bits) > d_.size() * 8) return false;
    uint64_t v = 0;
    for (int i = 0; i < bits; ++i, ++pos_) {
      v = (v << 1) | ((d_[pos_ >> 3] >> (7 - (pos_ & 7))) & 1);
    }
    out = v;
    return true;
  }
  bool readVarint(uint64_t& out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint64_t byte;
      if (!read(8, byte)) return false;
      v |= (byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        out = v;
        return true;
      }
    }
    return false;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> d_;
  size_t pos_ = 0;
};

}  // namespace

void Chunk::writeBits(uint64_t v, int bits) {
  for (int i = bits - 1; i >= 0; --i) {
    if (bitPos_ == 0) bytes_.push_back(0);
    if ((v >> i) & 1) bytes_.back() |= static_cast<uint8_t>(0x80 >> bitPos_);
    bitPos_ = (bitPos_ + 1) & 7;
  }
}

bool Chunk::append(int64_t t, double v) {
  if (full()) return false;
  const uint64_t vb = bitsOf(v);
  auto varint = [this](uint64_t u) {
    do {
      uint64_t b = u & 0x7f;
      u >>= 7;
      writeBits(b | (u ? 0x80 : 0), 8);
    } while (u);
  };
  if (n_ == 0) {
    varint(zig(t));
    writeBits(vb, 64);
    minT_ = t;
  } else {
    if (t <= t_) return false;
    const int64_t delta = t - t_;
    if (n_ == 1) {
      varint(zig(delta));
    } else {
      const int64_t dod = delta - tDelta_;
      if (dod == 0) {
        writeBits(0, 1);
      } else {
        bool done = false;
        for (const auto& b : kBuckets) {
          if (fits(dod, b.bits)) {
            writeBits(b.prefix, b.prefixLen);
            writeBits(static_cast<uint64_t>(dod) & ((uint64_t{1} << b.bits) - 1), b.bits);
            done = true;
            break;
          }
        }
        if (!done) {
          writeBits(0b1111, 4);
          writeBits(static_cast<uint64_t>(dod), 64);
        }
      }
    }
    tDelta_ = delta;
    // The value: XOR with the previous one.
    const uint64_t x = vb ^ v_;
    if (x == 0) {
      writeBits(0, 1);
    } else {
      int lead = std::countl_zero(x);
      int trail = std::countr_zero(x);
      if (lead > 31) lead = 31;  // 5 bits
      if (leading_ != 0xff && lead >= leading_ && trail >= trailing_) {
        writeBits(0b10, 2);
        const int sig = 64 - leading_ - trailing_;
        writeBits(x >> trailing_, sig);
      } else {
        leading_ = static_cast<uint8_t>(lead);
        trailing_ = static_cast<uint8_t>(trail);
        const int sig = 64 - lead - trail;  // 1..64; 64 is written as 0
        writeBits(0b11, 2);
        writeBits(static_cast<uint64_t>(lead), 5);
        writeBits(static_cast<uint64_t>(sig & 63), 6);
        writeBits(x >> trail, sig);
      }
    }
  }
  t_ = t;
  v_ = vb;
  ++n_;
  bytes_[0] = static_cast<uint8_t>(n_ >> 8);
  bytes_[1] = static_cast<uint8_t>(n_ & 0xff);
  return true;
}

Status decodeChunk(std::span<const uint8_t> data, std::vector<promql::Sample>& out) {
  auto bad = [](std::string why) {
    return makeError(EINVAL, "history chunk", std::move(why));
  };
  if (data.size() < 2) return bad("shorter than its header");
  const unsigned n = (unsigned{data[0]} << 8) | data[1];
  if (n > kChunkSamples)
    return bad("count " + std::to_string(n) + " above " + std::to_string(kChunkSamples));
  BitReader r(data.subspan(2));
  int64_t t = 0, delta = 0;
  uint64_t v = 0, u = 0;
  int leading = -1, trailing = 0;
  for (unsigned i = 0; i < n; ++i) {
    auto at = [&](const char* what) {
      return bad(std::string("truncated ") + what + " of sample " + std::to_string(i));
    };
    if (i == 0) {
      if (!r.readVarint(u)) return at("timestamp");
      t = unzig(u);
      if (!r.read(64, v)) return at("value");
      out.push_back({t, floatOf(v)});
      continue;
    }
    if (i == 1) {
      if (!r.readVarint(u)) return at("delta");
      delta = unzig(u);
    } else {
      int ones = 0;
      uint64_t bit;
      while (ones < 4) {
        if (!r.read(1, bit)) return at("dod prefix");
        if (!bit) break;
        ++ones;
      }
      int64_t dod = 0;
      if (ones == 4) {
        if (!r.read(64, u)) return at("dod");
        dod = static_cast<int64_t>(u);
      } else if (ones > 0) {
        const int bits = kBuckets[ones - 1].bits;
        if (!r.read(bits, u)) return at("dod");
        if (u >> (bits - 1)) u |= ~uint64_t{0} << bits;  // sign-extend
        dod = static_cast<int64_t>(u);
      }
      delta =
          static_cast<int64_t>(static_cast<uint64_t>(delta) + static_cast<uint64_t>(dod));
    }
    if (delta <= 0) return bad("timestamps not ascending at sample " + std::to_string(i));
    t = static_cast<int64_t>(static_cast<uint64_t>(t) + static_cast<uint64_t>(delta));
    uint64_t bit;
    if (!r.read(1, bit)) return at("value");
    if (bit) {
      if (!r.read(1, bit)) return at("value");
      if (bit) {
        uint64_t lead, sig;
        if (!r.read(5, lead) || !r.read(6, sig)) return at("value window");
        if (sig == 0) sig = 64;
        if (lead + sig > 64)
          return bad("value window past 64 bits at sample " + std::to_string(i));
        leading = static_cast<int>(lead);
        trailing = static_cast<int>(64 - lead - sig);
      } else if (leading < 0) {
        return bad("value reuses no window at sample " + std::to_string(i));
      }
      const int sig = 64 - leading - trailing;
      if (!r.read(sig, u)) return at("value bits");
      v ^= u << trailing;
    }
    out.push_back({t, floatOf(v)});
  }
  return Ok{};
}

}  // namespace memcg::history

// Decoder tests against a copy of a kernel's tracefs format files: records
// synthesised byte by byte (common_type at 0, common_pid at 4, as in every
// format file) and a fixture that loads the formats and the decoder once.
// No root, no tracefs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tracing/decoders.h"
#include "tracing/event_formats.h"

namespace memcg::testing {

struct RawRecord {
  std::vector<uint8_t> b;
  RawRecord(size_t n, uint16_t id, int32_t pid) : b(n, 0) {
    put(0, id, 2);
    put(4, static_cast<uint32_t>(pid), 4);
  }
  RawRecord& put(size_t off, uint64_t v, size_t size) {
    std::memcpy(b.data() + off, &v, size);  // little-endian host
    return *this;
  }
};

/// Loads `dir` (a tracefs copy) in SetUp; decode() fails the test on a
/// record the decoder rejects.
class FormatFixtureTest : public ::testing::Test {
 protected:
  explicit FormatFixtureTest(std::string dir) : dir_(std::move(dir)) {}
  void SetUp() override {
    auto f = tracing::EventFormats::load(dir_);
    ASSERT_TRUE(f.ok()) << f.error().message();
    formats_ = std::make_unique<tracing::EventFormats>(std::move(f.value()));
    auto d = tracing::Decoder::create(*formats_);
    ASSERT_TRUE(d.ok()) << d.error().message();
    dec_ = std::make_unique<tracing::Decoder>(std::move(d.value()));
  }
  tracing::Event decode(const RawRecord& r, uint64_t ts = 1000) {
    tracing::Event e;
    EXPECT_TRUE(dec_->decode(r.b.data(), static_cast<uint32_t>(r.b.size()), ts, e));
    return e;
  }
  std::string dir_;
  std::unique_ptr<tracing::EventFormats> formats_;
  std::unique_ptr<tracing::Decoder> dec_;
};

/// An aggregator input with the common fields set (the rest zero), for tests
/// that feed the aggregator directly.
inline tracing::Event ev(tracing::EventType t, int32_t pid, uint64_t ts) {
  tracing::Event e;
  e.type = t;
  e.pid = pid;
  e.ts = ts;
  return e;
}

}  // namespace memcg::testing

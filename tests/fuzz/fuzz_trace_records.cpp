// Raw tracepoint records through the decoder (tracing/decoders.h), built from
// the committed 6.18 format files (tests/fixtures/tracefs) as the unit tests
// build it, and the decoded events through the aggregator, the metric
// rendering and the JSON reports, as the tracer's reader thread and the API
// would.
//
// Input: a sequence of records, each [selector u8][length u8][length bytes].
// Each record is copied into a buffer of exactly its length (so ASan sees a
// read past it). A selector below 0xf0 picks one of the decoder's events and
// stamps its id into common_type; 0xf0.. keeps the bytes as they are.
// Timestamps advance by the selector's value in microseconds.
#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "metrics/metric.h"
#include "tests/support/fuzz_support.h"
#include "tracing/aggregator.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"
#include "tracing/lock_metrics.h"
#include "tracing/lock_symbols.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"

using namespace memcg;
using namespace memcg::tracing;

namespace {

/// pid -> one of a few cgroups; ids are path lengths, as in the unit tests.
class FakeResolver : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    if (tid <= 0 || tid % 5 == 0) return std::nullopt;
    return kPaths[tid % 4];
  }
  uint64_t idOf(const std::string& path) override { return path.size(); }
  std::string comm(int32_t tid) override { return "t" + std::to_string(tid); }
  std::optional<std::string> pathOfId(uint64_t id) override {
    for (const char* p : kPaths) {
      if (std::string_view(p).size() == id) return std::string(p);
    }
    return std::nullopt;
  }

 private:
  static constexpr const char* kPaths[4] = {"/", "/a", "/a/bb", "/ccc"};
};

EventFormats* formats;
Decoder* decoder;
std::vector<int> ids;
Kallsyms* syms;

volatile unsigned touched;
/// Reads every byte (ASan checks each), so a view past its buffer is a crash.
void touch(std::string_view s) {
  unsigned h = 0;
  for (char c : s) h = h * 31 + static_cast<unsigned char>(c);
  touched = h;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  auto f = EventFormats::load(MEMCG_TRACEFS_FIXTURES);
  FUZZ_CHECK(f.ok());
  formats = new EventFormats(std::move(f.value()));
  auto d = Decoder::create(*formats);
  FUZZ_CHECK(d.ok());
  decoder = new Decoder(std::move(d.value()));
  for (EventType t : decoder->supported()) ids.push_back(decoder->eventId(t));
  FUZZ_CHECK(!ids.empty());
  syms = new Kallsyms(Kallsyms::parse(
      "ffffffff81000000 T _stext\nffffffff81000100 t f1\nffffffff81100000 T f2\n"
      "ffffffff82000000 D d1\nffffffff82000100 d d2\nffffffff83000000 T _etext\n",
      1));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  AggregatorOptions o;
  o.max_cgroups = 3;  // small bounds, so the overflow paths run too
  o.max_pids = 16;
  o.max_processes = 4;
  o.max_exited_processes = 2;
  o.hierarchy_id = 4;
  Aggregator agg(o, std::make_unique<FakeResolver>());
  uint64_t ts = 1'000'000;
  size_t pos = 0, n = 0;
  while (pos + 2 <= size) {
    const uint8_t sel = data[pos];
    const size_t len = std::min<size_t>(data[pos + 1], size - pos - 2);
    std::vector<uint8_t> rec(data + pos + 2, data + pos + 2 + len);
    pos += 2 + len;
    const Decoder::FieldRef ct = decoder->commonType();
    if (sel < 0xf0 && rec.size() >= ct.offset + 2u) {
      const uint16_t id = static_cast<uint16_t>(ids[sel % ids.size()]);
      std::memcpy(rec.data() + ct.offset, &id, 2);
    }
    ts += sel * 1000ull;
    Event e;
    // A fresh heap buffer of exactly the record's size: an overread is a crash.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[rec.size() ? rec.size() : 1]);
    std::copy(rec.begin(), rec.end(), buf.get());
    if (!decoder->decode(buf.get(), static_cast<uint32_t>(rec.size()), ts, e)) {
      FUZZ_CHECK(e.type == EventType::kUnknown);
      continue;
    }
    touch(e.dst_path);
    touch(e.comm);
    if (e.stack_depth > 0) {
      FUZZ_CHECK(e.stack >= buf.get() &&
                 e.stack + e.stack_depth * 8u <= buf.get() + rec.size());
      touch(std::string_view(reinterpret_cast<const char*>(e.stack), e.stack_depth * 8u));
    }
    e.cpu = static_cast<int16_t>(n % 4);
    agg.apply(std::span<const Event>(&e, 1));  // the event points into buf
    if (++n % 8 == 0) agg.endRound();
  }
  TraceSnapshot s = agg.snapshot();
  s.running = true;
  s.locks.enabled = true;
  metrics::Sink sink;
  renderTraceSnapshot(s, sink);
  renderLockSnapshot(s.locks, sink);
  const auto replace = nlohmann::json::error_handler_t::replace;
  touch(reclaimReport(s).dump(-1, ' ', false, replace));
  TraceSnapshot base = s;
  touch(reclaimReport(s, &base, 1.0).dump(-1, ' ', false, replace));
  LockIds ids;
  touch(lockReport(s.locks, syms, ids).dump(-1, ' ', false, replace));
  return 0;
}

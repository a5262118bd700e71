// Decode + aggregate throughput on synthesised vmscan records (one core).
// Target: >= 5 million vmscan events per second.
//
// Records are laid out with the offsets the decoder resolved from the
// committed 6.18 format files, in the mix a memcg streaming workload shows:
// per reclaim pass a memcg begin, 4 lru_shrink_inactive, an end, and 2
// wakeup_kswapd requests, spread over 64 tasks in 8 cgroups.
// The "Detail" variants use the mix with every detail event on
// (--collector.vmscan.lru-detail and .shrink-slab): per pass a memcg begin,
// 4 x (lru_isolate, lru_shrink_inactive), 2 x (lru_isolate,
// lru_shrink_active), 3 write_folio, 4 shrink_slab start/end pairs, a
// throttled every 8th pass, the end, and 2 wakeup_kswapd; a reclaim_pages
// every 16th pass.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "tracing/aggregator.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"

namespace memcg::tracing {
namespace {

class StaticResolver : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    return "/bench_" + std::to_string(tid % 8);
  }
};

struct Corpus {
  std::unique_ptr<EventFormats> formats;
  std::unique_ptr<Decoder> decoder;
  std::vector<std::vector<uint8_t>> records;
  std::vector<uint64_t> ts;
};

Corpus build(bool detail) {
  {
    Corpus c;
    auto f = EventFormats::load(MEMCG_TRACEFS_FIXTURES);
    if (!f.ok()) std::abort();
    c.formats = std::make_unique<EventFormats>(std::move(f.value()));
    auto d = Decoder::create(*c.formats);
    if (!d.ok()) std::abort();
    c.decoder = std::make_unique<Decoder>(std::move(d.value()));
    const Decoder& dec = *c.decoder;
    auto make = [&](EventType t, int32_t pid, size_t size) {
      std::vector<uint8_t> r(size, 0);
      uint16_t id = static_cast<uint16_t>(dec.eventId(t));
      std::memcpy(r.data() + dec.commonType().offset, &id, 2);
      std::memcpy(r.data() + dec.commonPid().offset, &pid, 4);
      return r;
    };
    auto put = [&](std::vector<uint8_t>& r, EventType t, Decoder::FieldSlot s,
                   uint64_t v) {
      const auto& f = dec.field(t, s);
      std::memcpy(r.data() + f.offset, &v, f.size);
    };
    uint64_t now = 1'000'000;
    auto add = [&](std::vector<uint8_t> r, uint64_t dt) {
      c.records.push_back(std::move(r));
      c.ts.push_back(now += dt);
    };
    for (int pass = 0; pass < 4096; ++pass) {
      int32_t pid = 1000 + pass % 64;
      auto b = make(EventType::kMemcgReclaimBegin, pid, 24);
      c.records.push_back(b);
      c.ts.push_back(now += 200);
      if (detail) {
        for (int i = 0; i < 2; ++i) {
          auto iso = make(EventType::kLruIsolate, pid, 52);
          put(iso, EventType::kLruIsolate, Decoder::kNrScanned, 32);
          put(iso, EventType::kLruIsolate, Decoder::kNrTaken, 32);
          put(iso, EventType::kLruIsolate, Decoder::kLru, 3);
          add(iso, 100);
          auto a = make(EventType::kLruShrinkActive, pid, 56);
          put(a, EventType::kLruShrinkActive, Decoder::kNrTaken, 32);
          put(a, EventType::kLruShrinkActive, Decoder::kNrDeactivated, 20);
          put(a, EventType::kLruShrinkActive, Decoder::kReclaimFlags, kReclaimWbFile);
          add(a, 1000);
        }
        for (int i = 0; i < 4; ++i) {
          add(make(EventType::kShrinkSlabStart, pid, 80), 50);
          auto e = make(EventType::kShrinkSlabEnd, pid, 64);
          put(e, EventType::kShrinkSlabEnd, Decoder::kFreed, 10);
          add(e, 400);
        }
        if (pass % 8 == 0) {
          auto t = make(EventType::kThrottled, pid, 24);
          put(t, EventType::kThrottled, Decoder::kDelayedUs, 100);
          put(t, EventType::kThrottled, Decoder::kReason, 1);
          add(t, 100);
        }
        if (pass % 16 == 0) {
          auto r = make(EventType::kReclaimPages, pid, 88);
          put(r, EventType::kReclaimPages, Decoder::kNrScanned, 512);
          put(r, EventType::kReclaimPages, Decoder::kNrReclaimed, 500);
          add(r, 100);
        }
      }
      for (int i = 0; i < 4; ++i) {
        if (detail) {
          auto iso = make(EventType::kLruIsolate, pid, 52);
          put(iso, EventType::kLruIsolate, Decoder::kNrScanned, 32);
          put(iso, EventType::kLruIsolate, Decoder::kNrTaken, 32);
          put(iso, EventType::kLruIsolate, Decoder::kLru, 2);
          add(iso, 100);
        }
        auto l = make(EventType::kLruShrinkInactive, pid, 96);
        put(l, EventType::kLruShrinkInactive, Decoder::kNrScanned, 32);
        put(l, EventType::kLruShrinkInactive, Decoder::kNrReclaimed, 30);
        put(l, EventType::kLruShrinkInactive, Decoder::kReclaimFlags, kReclaimWbFile);
        c.records.push_back(l);
        c.ts.push_back(now += 3000);
        if (detail && i < 3) {
          auto w = make(EventType::kWriteFolio, pid, 24);
          put(w, EventType::kWriteFolio, Decoder::kReclaimFlags, kReclaimWbFile | kReclaimWbAsync);
          add(w, 100);
        }
      }
      auto e = make(EventType::kMemcgReclaimEnd, pid, 16);
      put(e, EventType::kMemcgReclaimEnd, Decoder::kNrReclaimed, 120);
      c.records.push_back(e);
      c.ts.push_back(now += 500);
      for (int i = 0; i < 2; ++i) {
        auto w = make(EventType::kWakeupKswapd, pid, 32);
        c.records.push_back(w);
        c.ts.push_back(now += 100);
      }
    }
    return c;
  }
}

Corpus& corpus(bool detail) {
  static Corpus plain = build(false);
  static Corpus full = build(true);
  return detail ? full : plain;
}

void BM_Decode(benchmark::State& state) {
  Corpus& c = corpus(state.range(0) != 0);
  Event e;
  for (auto _ : state) {
    for (size_t i = 0; i < c.records.size(); ++i) {
      c.decoder->decode(c.records[i].data(), static_cast<uint32_t>(c.records[i].size()),
                        c.ts[i], e);
      benchmark::DoNotOptimize(e);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * c.records.size()));
}
BENCHMARK(BM_Decode)->ArgName("detail")->Arg(0)->Arg(1);

void BM_DecodeAggregate(benchmark::State& state) {
  Corpus& c = corpus(state.range(0) != 0);
  Aggregator agg(AggregatorOptions{}, std::make_unique<StaticResolver>());
  std::vector<Event> chunk(1024);
  for (auto _ : state) {
    size_t used = 0;
    for (size_t i = 0; i < c.records.size(); ++i) {
      if (c.decoder->decode(c.records[i].data(),
                            static_cast<uint32_t>(c.records[i].size()), c.ts[i],
                            chunk[used]) &&
          ++used == chunk.size()) {
        agg.apply(std::span<const Event>(chunk.data(), used));
        used = 0;
      }
    }
    agg.apply(std::span<const Event>(chunk.data(), used));
    agg.endRound();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * c.records.size()));
}
BENCHMARK(BM_DecodeAggregate)->ArgName("detail")->Arg(0)->Arg(1);

void BM_Snapshot(benchmark::State& state) {
  Corpus& c = corpus(true);
  Aggregator agg(AggregatorOptions{}, std::make_unique<StaticResolver>());
  std::vector<Event> ev(c.records.size());
  for (size_t i = 0; i < c.records.size(); ++i) {
    c.decoder->decode(c.records[i].data(), static_cast<uint32_t>(c.records[i].size()),
                      c.ts[i], ev[i]);
  }
  agg.apply(ev);
  for (auto _ : state) benchmark::DoNotOptimize(agg.snapshot());
}
BENCHMARK(BM_Snapshot);

}  // namespace
}  // namespace memcg::tracing

BENCHMARK_MAIN();

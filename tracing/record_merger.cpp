#include "tracing/record_merger.h"

#include <algorithm>
#include <cstring>
#include <limits>

extern "C" {
// kbuffer.h is plain C without extern "C" guards.
#include <kbuffer.h>
}

#include "tracing/tracefs_session.h"

namespace memcg::tracing {

struct RecordMerger::Stream {
  int cpu = 0;
  kbuffer* kb = nullptr;     // the merge cursor
  kbuffer* probe = nullptr;  // inspects pages without moving the cursor
  // 2 x pages_per_round sub-buffers, allocated once and not zeroed: a large
  // allocation is mapped lazily, so only pages rounds actually fill become
  // resident (growing a vector per round cost a copy, a memset and page
  // faults: ~9% of the reader's CPU at 30k events/s).
  std::unique_ptr<char[]> pages;
  size_t cap = 0;
  size_t npages = 0;   // stored sub-buffers
  size_t page = 0;     // the cursor's sub-buffer
  size_t ordinal = 0;  // the cursor's record within it (0 = first)
  void* data = nullptr;  // the cursor's record; nullptr: none stored past it
  unsigned long long ts = 0;
  size_t taken = 0;  // sub-buffers taken in this round
  bool drained = true;
  ~Stream() {
    if (kb) kbuffer_free(kb);
    if (probe) kbuffer_free(probe);
  }
};

RecordMerger::RecordMerger(size_t subbuf_size, size_t pages_per_round)
    : subbuf_size_(subbuf_size), pages_per_round_(std::max<size_t>(1, pages_per_round)) {}

RecordMerger::~RecordMerger() = default;

bool RecordMerger::addCpu(int cpu, size_t* index) {
  auto s = std::make_unique<Stream>();
  s->cpu = cpu;
  s->kb = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
  s->probe = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
  if (!s->kb || !s->probe) return false;
  s->cap = 2 * pages_per_round_;
  if (index) *index = streams_.size();
  streams_.push_back(std::move(s));
  return true;
}

int RecordMerger::cpuId(size_t i) const { return streams_[i]->cpu; }

char* RecordMerger::reserve(size_t i) {
  Stream& s = *streams_[i];
  if (s.taken >= pages_per_round_ || s.npages >= s.cap) return nullptr;
  if (!s.pages) s.pages.reset(new char[s.cap * subbuf_size_]);
  return s.pages.get() + s.npages * subbuf_size_;
}

RecordMerger::PageInfo RecordMerger::commit(size_t i, size_t n) {
  Stream& s = *streams_[i];
  PageInfo info;
  char* dst = s.pages.get() + s.npages * subbuf_size_;
  if (n < subbuf_size_) std::memset(dst + n, 0, subbuf_size_ - n);
  if (kbuffer_load_subbuffer(s.probe, dst) != 0) return info;
  info.ok = true;
  info.missed = kbuffer_missed_events(s.probe);
  const int used = kbuffer_subbuffer_size(s.probe);
  const int capacity = static_cast<int>(subbuf_size_) - kbuffer_start_of_data(s.probe);
  info.partial = used + 512 < capacity;
  ++s.npages;
  ++s.taken;
  ++subbufs_;
  return info;
}

void RecordMerger::setDrained(size_t i, bool drained) { streams_[i]->drained = drained; }

void RecordMerger::seek(Stream& s) {
  s.data = nullptr;
  while (s.page < s.npages) {
    if (kbuffer_load_subbuffer(s.kb, s.pages.get() + s.page * subbuf_size_) == 0) {
      s.data = kbuffer_read_event(s.kb, &s.ts);
      for (size_t k = 0; k < s.ordinal && s.data; ++k) s.data = kbuffer_next_event(s.kb, &s.ts);
      if (s.data) return;
    }
    ++s.page;
    s.ordinal = 0;
  }
}

void RecordMerger::advance(Stream& s) {
  s.data = kbuffer_next_event(s.kb, &s.ts);
  ++s.ordinal;
  if (s.data) return;
  ++s.page;
  s.ordinal = 0;
  seek(s);
}

uint64_t RecordMerger::newestTs(Stream& s) {
  for (size_t p = s.npages; p-- > s.page;) {
    if (kbuffer_load_subbuffer(s.probe, s.pages.get() + p * subbuf_size_) != 0) continue;
    unsigned long long ts = 0, last = 0;
    bool any = false;
    for (void* d = kbuffer_read_event(s.probe, &ts); d; d = kbuffer_next_event(s.probe, &ts)) {
      last = ts;
      any = true;
    }
    if (any) return last;
  }
  return std::numeric_limits<uint64_t>::max();  // nothing stored: no bound from it
}

uint64_t RecordMerger::emit(uint64_t watermark, RecordSink* sink) {
  uint64_t limit = watermark;
  for (auto& s : streams_) {
    if (!s->drained) limit = std::min(limit, newestTs(*s));
  }
  auto later = [](const Stream* a, const Stream* b) { return a->ts > b->ts; };
  heap_.clear();
  for (auto& s : streams_) {
    if (!s->data) seek(*s);  // pages taken in since the cursor ran out
    if (s->data) heap_.push_back(s.get());
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  uint64_t n = 0;
  while (!heap_.empty() && heap_.front()->ts <= limit) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Stream* best = heap_.back();
    if (best->ts < last_emitted_) {
      ++out_of_order_;
    } else {
      last_emitted_ = best->ts;
    }
    int size = kbuffer_event_size(best->kb);
    if (size > 0 && sink) {
      sink->onRecord(best->data, static_cast<uint32_t>(size), best->ts, best->cpu);
    }
    ++n;
    advance(*best);
    if (best->data) {
      std::push_heap(heap_.begin(), heap_.end(), later);
    } else {
      heap_.pop_back();
    }
  }
  return n;
}

void RecordMerger::compact() {
  for (auto& sp : streams_) {
    Stream& s = *sp;
    s.taken = 0;
    s.drained = true;
    if (!s.data) {
      s.npages = s.page = s.ordinal = 0;
      continue;
    }
    if (s.page == 0) continue;  // the cursor's page did not move
    std::memmove(s.pages.get(), s.pages.get() + s.page * subbuf_size_,
                 (s.npages - s.page) * subbuf_size_);
    s.npages -= s.page;
    s.page = 0;
    seek(s);  // reloads the moved page and walks to the same record
  }
}

uint64_t RecordMerger::held() const {
  uint64_t n = 0;
  for (const auto& sp : streams_) {
    const Stream& s = *sp;
    if (!s.data) continue;
    for (size_t p = s.page; p < s.npages; ++p) {
      if (kbuffer_load_subbuffer(s.probe, s.pages.get() + p * subbuf_size_) != 0) continue;
      unsigned long long ts = 0;
      size_t k = 0;
      for (void* d = kbuffer_read_event(s.probe, &ts); d; d = kbuffer_next_event(s.probe, &ts)) {
        if (p != s.page || k >= s.ordinal) ++n;
        ++k;
      }
    }
  }
  return n;
}

}  // namespace memcg::tracing

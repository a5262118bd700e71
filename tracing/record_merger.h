// Per-CPU ring-buffer sub-buffers merged into one stream in global timestamp
// order, up to a watermark; what is newer waits for the next round.
//
// Why a watermark: the reader reads CPU0's buffer, then CPU1's.
// Ordering only the records one round read is not enough: a record CPU0's
// writer commits while the reader is on CPU1 comes in the next round, after
// newer CPU1 records of the same task (a begin on CPU0, the task migrates,
// its end on CPU1). So each round hands out only what is no newer than a
// watermark W that no record still to come can be older than, and keeps the
// rest, already read, for the next round. The caller chooses W
// (TracefsSession: the trace clock read before reading any CPU, minus a
// commit slack; see tracefs_session.h for why that holds). This class lowers
// it further for every CPU read only in part this round (its storage full,
// or still more data after a partial sub-buffer): that CPU's unread records
// are at least as new as the last one read from it, and nothing is known
// beyond that.
//
// Records handed out older than one handed out before (a record committed
// later than the bound allowed) are counted, not dropped: outOfOrder() makes
// any such case visible.
//
// Sub-buffer layout: the kernel's ring-buffer page (u64 timestamp, long
// commit, events), parsed with libtraceevent's kbuffer; records point into
// storage kept here and stay valid until compact().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct kbuffer;

namespace memcg::tracing {

class RecordSink;

class RecordMerger {
 public:
  /// `subbuf_size`: bytes per sub-buffer; `pages_per_round`: most sub-buffers
  /// one CPU takes in per round (storage holds twice that: what waits from the
  /// last round and one round's worth of new ones).
  RecordMerger(size_t subbuf_size, size_t pages_per_round);
  ~RecordMerger();
  RecordMerger(const RecordMerger&) = delete;
  RecordMerger& operator=(const RecordMerger&) = delete;

  /// Adds a CPU's stream; returns its index. kbuffers are allocated here (false on ENOMEM).
  bool addCpu(int cpu, size_t* index);
  size_t cpuCount() const { return streams_.size(); }
  int cpuId(size_t i) const;

  /// Room for the next sub-buffer of stream `i` this round (subbuf_size
  /// bytes), or nullptr when it took pages_per_round already or is full.
  char* reserve(size_t i);
  struct PageInfo {
    bool ok = false;     ///< a valid sub-buffer (else dropped)
    int missed = 0;      ///< events the kernel flagged as missed before it (-1: some)
    bool partial = false;  ///< far from full: likely the page the writer is on
  };
  /// Takes the `n` bytes just read into reserve(i) (zero-pads the rest).
  PageInfo commit(size_t i, size_t n);
  /// Whether stream `i` was read until the kernel had nothing more for it
  /// this round. Not drained: the watermark is capped at its newest record.
  void setDrained(size_t i, bool drained);

  /// Hands `sink`, oldest first across streams, every stored record with
  /// timestamp <= min(watermark, newest record of each stream not drained);
  /// the rest stays for the next round. Returns how many were handed out.
  uint64_t emit(uint64_t watermark, RecordSink* sink);
  /// Frees what emit() handed out, keeps the rest (moved to the front of
  /// storage) and resets the per-round state; call after the sink is done
  /// with this round's records (they point into storage).
  void compact();

  /// Records waiting for a later round (after emit()).
  uint64_t held() const;
  /// Records handed out with a timestamp older than one handed out before.
  uint64_t outOfOrder() const { return out_of_order_; }
  /// Sub-buffers taken in (commit() ok) since the start.
  uint64_t subbufs() const { return subbufs_; }

 private:
  struct Stream;
  void seek(Stream& s);      // cursor to the first record at or after (page, ordinal)
  void advance(Stream& s);   // cursor to the next record
  uint64_t newestTs(Stream& s);

  size_t subbuf_size_;
  size_t pages_per_round_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Stream*> heap_;
  uint64_t last_emitted_ = 0;
  uint64_t out_of_order_ = 0;
  uint64_t subbufs_ = 0;
};

}  // namespace memcg::tracing

#include "tracing/report_rows.h"

#include <algorithm>
#include <utility>

namespace memcg::tracing {
void addReportRow(ProcessTraceStats& to, const ProcessTraceStats& p) {
  for (size_t k = 0; k < kReclaimKinds; ++k) to.reclaims[k] += p.reclaims[k];
  to.stall_ns += p.stall_ns;
  to.softlimit_ns += p.softlimit_ns;
  to.wake_requests += p.wake_requests;
  to.scanned_pages += p.scanned_pages;
  to.reclaimed_pages += p.reclaimed_pages;
  to.write_sync += p.write_sync;
  to.write_async += p.write_async;
  to.throttled += p.throttled;
  to.throttled_us += p.throttled_us;
  to.kswapd_wakeups += p.kswapd_wakeups;
  to.kswapd_rewakeups += p.kswapd_rewakeups;
  to.kswapd_awake_ns += p.kswapd_awake_ns;
}

ReportRows::ReportRows(size_t max_processes, size_t max_exited_processes)
    : max_processes_(max_processes), max_exited_(max_exited_processes) {
  ProcessTraceStats other;
  other.other = true;
  rows_.push_back(std::move(other));
  slot_.push_back(SeriesTable::kUnknown);
}

ProcessTraceStats& ReportRows::row(uint32_t& index, int32_t tid, uint32_t slot,
                                   CgroupResolver* resolver) {
  if (index == kNoRow) {
    // tid 0 (work in interrupt context on an idle CPU) never exits: "other".
    if (live_ >= max_processes_ || tid <= 0) return rows_[0];
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<uint32_t>(rows_.size());
      rows_.emplace_back();
      slot_.push_back(SeriesTable::kUnknown);
    }
    ProcessTraceStats& p = rows_[i];
    p = ProcessTraceStats{};
    p.pid = tid;
    if (resolver) p.comm = resolver->comm(tid);
    index = i;
    ++live_;
  }
  slot_[index] = slot;
  return rows_[index];
}

void ReportRows::nameIfUnnamed(uint32_t index, std::string_view comm) {
  if (index != kNoRow && rows_[index].comm.empty()) rows_[index].comm = comm;
}

void ReportRows::drop(uint32_t& index, const SeriesTable& series) {
  if (index == kNoRow) return;
  ProcessTraceStats p = std::move(rows_[index]);
  p.cgroup = series.labelOf(slot_[index]);
  p.exited = true;
  rows_[index] = ProcessTraceStats{};  // pid 0 = free
  free_.push_back(index);
  --live_;
  index = kNoRow;
  keepExited(std::move(p));
}

void ReportRows::keepExited(ProcessTraceStats p) {
  p.exited = true;
  // Keep the most stalled exited tasks (ties: most reclaims); sum the rest.
  auto weight = [](const ProcessTraceStats& x) {
    uint64_t n = 0;
    for (uint64_t r : x.reclaims) n += r;
    return std::make_pair(x.stall_ns, n + x.scanned_pages);
  };
  if (exited_.size() < max_exited_) {
    exited_.push_back(std::move(p));
    return;
  }
  if (exited_.empty()) {
    addReportRow(rows_[0], p);
    return;
  }
  auto least = std::min_element(exited_.begin(), exited_.end(),
                                [&](const auto& a, const auto& b) { return weight(a) < weight(b); });
  if (weight(*least) < weight(p)) std::swap(*least, p);
  addReportRow(rows_[0], p);
}

void ReportRows::copyExitedTo(std::vector<ProcessTraceStats>& out) const {
  out.insert(out.end(), exited_.begin(), exited_.end());
  out.push_back(rows_[0]);
}

void ReportRows::dropSlot(uint32_t slot) {
  for (uint32_t& s : slot_) {
    if (s == slot) s = SeriesTable::kUnknown;
  }
}

void ReportRows::copyTo(std::vector<ProcessTraceStats>& out, const SeriesTable& series) const {
  out.reserve(out.size() + live_ + exited_.size() + 1);
  for (size_t i = 1; i < rows_.size(); ++i) {
    if (rows_[i].pid == 0) continue;  // free
    out.push_back(rows_[i]);
    out.back().cgroup = series.labelOf(slot_[i]);
  }
  copyExitedTo(out);
}

}  // namespace memcg::tracing

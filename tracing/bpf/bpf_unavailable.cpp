// BpfTracer in a build without libbpf/bpftool/clang: start() says so, so the
// exporter runs the tracefs backend (auto) or reports the collector down (bpf).
#include <cerrno>

#include "tracing/bpf/bpf_tracer.h"

namespace memcg::tracing::bpf {

struct BpfTracer::Impl {
  SnapshotHistory history;
  LockIds lock_ids;
};

BpfTracer::BpfTracer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpfTracer::~BpfTracer() = default;

Result<std::unique_ptr<BpfTracer>> BpfTracer::start(const BpfTracerOptions& o) {
  return makeError(ENOSYS, "bpf", probe(o).reason);
}
TraceSnapshot BpfTracer::snapshot() const { return {}; }
SnapshotHistory& BpfTracer::reportHistory() { return impl_->history; }
const Kallsyms* BpfTracer::kallsyms() { return nullptr; }
LockIds& BpfTracer::lockIds() { return impl_->lock_ids; }
bool BpfTracer::lockAddresses() const { return false; }
std::vector<MapSize> BpfTracer::mapSizes() const { return {}; }
uint64_t BpfTracer::contentionEnds() const { return 0; }
BpfTracer::Misses BpfTracer::misses() const { return {}; }
std::optional<PidCgroup> BpfTracer::cgroupOf(int32_t) const { return std::nullopt; }
void BpfTracer::markReclaimer(int32_t) {}
void BpfTracer::unmarkReclaimer(int32_t) {}
bool BpfTracer::beginEpisode(int32_t, std::string_view) { return false; }
void BpfTracer::endEpisode(int32_t) {}

}  // namespace memcg::tracing::bpf

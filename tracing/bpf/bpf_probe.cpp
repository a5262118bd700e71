// probe() and built() of bpf_tracer.h: compiled in every build, so `auto`
// can say why the backend is unavailable whether or not it was built.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracing/bpf/bpf_tracer.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

namespace memcg::tracing::bpf {
namespace {

bool hasCap(const __user_cap_data_struct (&d)[2], int cap) {
  return (d[cap / 32].effective & (1u << (cap % 32))) != 0;
}

}  // namespace

bool built() {
#ifdef MEMCG_HAVE_BPF
  return true;
#else
  return false;
#endif
}

Availability probe(const BpfTracerOptions& o) {
  if (!built())
    return {
        false,
        "built without BPF support (libbpf-dev, bpftool or clang missing at build time)"};
  if (::access(o.btf_path.c_str(), R_OK) != 0)
    return {false, "kernel has no BTF (" + o.btf_path + " not readable)"};
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return {false, "capget failed"};
  const bool admin = hasCap(data, CAP_SYS_ADMIN);
  if (!admin && !(hasCap(data, CAP_BPF) && hasCap(data, CAP_PERFMON)))
    return {false, "missing CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"};
  return {true, ""};
}

}  // namespace memcg::tracing::bpf

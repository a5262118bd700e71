// The bpf backend as a build without libbpf-dev, bpftool or clang has it
// (tracing/bpf/bpf_unavailable.cpp), built and linked in every build: its
// start() says why, and every member of bpf_tracer.h has a stand-in (the
// virtual ones through the vtable its destructor emits, the others taken
// below), or this test does not link.
#include <gtest/gtest.h>

#include "tracing/bpf/bpf_tracer.h"

namespace memcg::tracing::bpf {
namespace {

TEST(BpfUnavailable, StartSaysTheBuildHasNoBpfAndEveryMemberLinks) {
  EXPECT_FALSE(built());
  const Availability a = probe(BpfTracerOptions{});
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("built without BPF support"), std::string::npos) << a.reason;
  auto t = BpfTracer::start(BpfTracerOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("built without BPF support"), std::string::npos)
      << t.error().message();
  // The members no vtable holds: stored where the compiler must keep them.
  volatile auto misses = &BpfTracer::misses;
  volatile auto ends = &BpfTracer::contentionEnds;
  volatile auto sizes = &BpfTracer::mapSizes;
  EXPECT_TRUE(misses != nullptr && ends != nullptr && sizes != nullptr);
}

}  // namespace
}  // namespace memcg::tracing::bpf

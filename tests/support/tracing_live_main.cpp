// The main() of the tracing live tests: gtest with LiveEnv, which decides
// whether they run (root, cgroup v1 memory, tracefs) or skip with a reason.
#include <gtest/gtest.h>

#include "tests/support/tracing_live_support.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new memcg::tracing::live::LiveEnv);
  return RUN_ALL_TESTS();
}

// tests/support/zram_swap.h: a run killed with SIGKILL leaves its zram swap
// device on; the next ZramSwap removes it (and only it: its own device and
// the devices of live owners stay).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/zram_swap.h"

namespace memcg::test {
namespace {

bool swappedOn(const std::string& dev) {
  std::ifstream f("/proc/swaps");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(dev + " ", 0) == 0 || line.rfind(dev + "\t", 0) == 0) return true;
  }
  return false;
}

TEST(ZramCleanup, ADeviceOfAKilledRunIsRemovedByTheNext) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (::access("/sys/class/zram-control/hot_add", R_OK) != 0)
    GTEST_SKIP() << "no /sys/class/zram-control (CONFIG_ZRAM)";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    ZramSwap z(16ull << 20);  // never destroyed: the parent SIGKILLs us
    std::string msg = z.on ? z.dev : "-" + z.why;
    msg += "\n";
    (void)!::write(fds[1], msg.data(), msg.size());
    for (;;) ::pause();
  }
  ::close(fds[1]);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) {
    got.append(buf, static_cast<size_t>(n));
    if (got.find('\n') != std::string::npos) break;
  }
  ::close(fds[0]);
  if (!got.empty() && got.back() == '\n') got.pop_back();
  if (got.empty() || got[0] == '-') {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    GTEST_SKIP() << "no zram swap here: " << got;
  }
  const std::string dev = got;
  EXPECT_TRUE(swappedOn(dev)) << dev;
  {
    // While its owner lives, another ZramSwap leaves the device alone.
    ZramSwap other(16ull << 20);
    ASSERT_TRUE(other.on) << other.why;
    EXPECT_EQ(other.staleRemoved, 0);
    EXPECT_TRUE(swappedOn(dev));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(swappedOn(dev)) << "a SIGKILLed run leaves its swap on";
  // The next run's first step (every ZramSwap takes it) removes it.
  EXPECT_GE(removeStaleZramDevices(), 1);
  EXPECT_FALSE(swappedOn(dev)) << dev << " left behind";
  EXPECT_FALSE(std::filesystem::exists(std::string(kZramStateDir) + dev.substr(4)));
}

}  // namespace
}  // namespace memcg::test

// A zram swap device of a test's own (zram-control/hot_add), swapped on for
// one test and swapped off and removed after, also when an assertion fails.
//
// A run killed with SIGKILL (a ctest timeout, a killed CI job) runs no
// destructor and leaves the device swapped on. So every device this helper
// creates is marked twice: its swap signature carries kZramLabel (mkswap -L),
// and a state file kZramStateDir/zram<N> holds the pid of the process that
// made it. The next ZramSwap (any test, any worktree) first removes the
// devices whose state file names a process that is gone and whose swap label
// is still ours; nothing else is touched (not zram devices without a state
// file, not a device of a test that is still running).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/swap.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/text_file.h"

namespace memcg::test {

inline constexpr const char* kZramLabel = "memcgexp_test";  // a swap label has 16 bytes
inline constexpr const char* kZramStateDir = "/run/memcg_exporter_test_zram";

namespace zram_detail {

using test::readText;
using test::writeText;

/// The volume label of a swap signature on `dev` (mkswap -L); empty if none.
inline std::string swapLabel(const std::string& dev) {
  int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const long page = ::sysconf(_SC_PAGESIZE);
  char magic[10] = {};
  char label[17] = {};
  // struct swap_header: 1024 boot bytes, version, last_page, nr_badpages
  // (u32 each), a 16-byte uuid, then the 16-byte volume label; the magic
  // "SWAPSPACE2" ends the first page.
  bool ok = ::pread(fd, magic, sizeof magic, page - 10) == sizeof magic &&
            std::memcmp(magic, "SWAPSPACE2", 10) == 0 &&
            ::pread(fd, label, 16, 1052) == 16;
  ::close(fd);
  return ok ? std::string(label) : std::string();
}

inline bool processAlive(const std::string& pidText) {
  char* end = nullptr;
  long pid = std::strtol(pidText.c_str(), &end, 10);
  if (pid <= 0 || end == pidText.c_str()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

inline void removeDevice(int id) {
  const std::string n = std::to_string(id);
  ::swapoff(("/dev/zram" + n).c_str());
  // reset is EBUSY for a moment after swapoff on a busy host.
  for (int i = 0; i < 50 && !writeText("/sys/block/zram" + n + "/reset", "1"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  writeText("/sys/class/zram-control/hot_remove", n);
}

}  // namespace zram_detail

/// Removes the zram devices a killed earlier run left (see above); returns
/// how many. Safe to call from concurrent tests: a live owner keeps its device.
inline int removeStaleZramDevices() {
  namespace fs = std::filesystem;
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(kZramStateDir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("zram", 0) != 0) continue;
    char* end = nullptr;
    const long id = std::strtol(name.c_str() + 4, &end, 10);
    if (end == name.c_str() + 4 || *end != '\0') continue;
    if (zram_detail::processAlive(zram_detail::readText(e.path().string()))) continue;
    if (!fs::exists("/sys/block/" + name)) {  // removed since (by anyone)
      fs::remove(e.path(), ec);
      continue;
    }
    // The id may have been reused by someone else since: only our label.
    // (A run killed between hot_add and mkswap leaves an unlabelled device:
    // it is left alone, as is its state file.)
    if (zram_detail::swapLabel("/dev/" + name) != kZramLabel) continue;
    zram_detail::removeDevice(static_cast<int>(id));
    ++removed;
    fs::remove(e.path(), ec);
  }
  return removed;
}

struct ZramSwap {
  int id = -1;
  std::string dev, why;
  bool on = false;
  int staleRemoved = 0;  ///< devices of killed earlier runs removed first

  explicit ZramSwap(uint64_t bytes) {
    staleRemoved = removeStaleZramDevices();
    std::string n = zram_detail::readText("/sys/class/zram-control/hot_add");
    if (n.empty()) {
      why = "no /sys/class/zram-control/hot_add (CONFIG_ZRAM)";
      return;
    }
    char* end = nullptr;
    long v = std::strtol(n.c_str(), &end, 10);
    if (end == n.c_str() || *end != '\0' || v < 0) {
      why = "zram hot_add answered \"" + n + "\"";
      return;
    }
    id = static_cast<int>(v);
    dev = "/dev/zram" + std::to_string(id);
    std::error_code ec;
    std::filesystem::create_directories(kZramStateDir, ec);
    {
      std::ofstream f(stateFile());
      f << ::getpid() << "\n";
    }
    const std::string sys = "/sys/block/zram" + std::to_string(id);
    if (!zram_detail::writeText(sys + "/disksize", std::to_string(bytes))) {
      why = "cannot size " + sys + ": " + std::strerror(errno);
      return;
    }
    for (int i = 0; i < 100 && ::access(dev.c_str(), F_OK) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::system(
            ("mkswap -L " + std::string(kZramLabel) + " " + dev + " >/dev/null 2>&1")
                .c_str()) != 0) {
      why = "mkswap " + dev + " failed (util-linux)";
      return;
    }
    if (::swapon(dev.c_str(), 0) != 0) {
      why = "swapon " + dev + ": " + std::strerror(errno);
      return;
    }
    on = true;
  }
  ~ZramSwap() {
    if (id < 0) return;
    zram_detail::removeDevice(id);
    std::error_code ec;
    std::filesystem::remove(stateFile(), ec);
  }
  ZramSwap(const ZramSwap&) = delete;
  ZramSwap& operator=(const ZramSwap&) = delete;

 private:
  std::string stateFile() const {
    return std::string(kZramStateDir) + "/zram" + std::to_string(id);
  }
};

}  // namespace memcg::test

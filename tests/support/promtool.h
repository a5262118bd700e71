// `promtool check metrics` on an exposition text, for unit tests that render
// metric families (the goldens are linted by ctest directly).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace memcg::testing {

/// Success when promtool exits 0 and prints nothing; else its output.
inline ::testing::AssertionResult promtoolCheck(const std::string& promtool,
                                                const std::string& text) {
  char path[] = "/tmp/memcg_exporter_test_promXXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return ::testing::AssertionFailure() << "mkstemp failed";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(path);
    return ::testing::AssertionFailure() << "cannot write " << path;
  }
  const std::string cmd = promtool + " check metrics < " + path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    ::unlink(path);
    return ::testing::AssertionFailure() << "cannot run " << promtool;
  }
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = ::pclose(p);
  ::unlink(path);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && out.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "promtool check metrics: " << out;
}

}  // namespace memcg::testing

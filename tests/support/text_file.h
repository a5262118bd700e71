// Whole-file text helpers for the live tests and benches (the tests' own,
// independent of the exporter's readers, so a bug there cannot hide in both).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace memcg::test {

/// The file's text without trailing newlines and spaces; empty if unreadable.
inline std::string readText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// One write(2) of `text` to an existing file (cgroupfs and sysfs files take
/// a value per write); false if it could not be opened or was not all taken.
inline bool writeText(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace memcg::test

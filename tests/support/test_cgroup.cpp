#include "tests/support/test_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace memcg::test {

std::string v1SkipReason() {
  if (::geteuid() != 0) return "needs root (creates a memory cgroup)";
  if (::access((std::string(kV1MemoryRoot) + "/memory.limit_in_bytes").c_str(), F_OK) != 0) {
    return "no cgroup v1 memory controller at /sys/fs/cgroup/memory (the v2 lane covers v2)";
  }
  return {};
}

TestCgroupV1::TestCgroupV1(const std::string& name) {
  label_ = "/memcg_exporter_test_" + name + "_" + std::to_string(::getpid());
  path_ = std::string(kV1MemoryRoot) + label_;
  if (::mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + path_ + ": " + std::strerror(errno));
  }
}

TestCgroupV1::~TestCgroupV1() {
  // Kill whatever is left inside, then remove the cgroup (retry: tasks take a
  // moment to leave after SIGKILL).
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::ifstream procs(path_ + "/cgroup.procs");
    pid_t pid;
    bool any = false;
    while (procs >> pid) {
      ::kill(pid, SIGKILL);
      any = true;
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {  // reap our killed children
    }
    if (!any && ::rmdir(path_.c_str()) == 0) return;
    if (errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void TestCgroupV1::write(const std::string& file, const std::string& value) const {
  std::string p = path_ + "/" + file;
  int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open " + p + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    throw std::runtime_error("write " + p + ": " + std::strerror(e));
  }
}

std::string TestCgroupV1::read(const std::string& file) const {
  std::ifstream f(path_ + "/" + file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

uint64_t TestCgroupV1::readU64(const std::string& file) const {
  return std::stoull(read(file));
}

uint64_t TestCgroupV1::stat(const std::string& key) const {
  std::istringstream s(read("memory.stat"));
  std::string k;
  uint64_t v;
  while (s >> k >> v) {
    if (k == key) return v;
  }
  throw std::runtime_error("no memory.stat key " + key);
}

namespace {
// In the child: join the cgroup and read the file to its end.
void joinAndStream(const std::string& cgroup, const std::string& file) {
  std::string me = std::to_string(::getpid());
  int cfd = ::open((cgroup + "/cgroup.procs").c_str(), O_WRONLY);
  if (cfd < 0 || ::write(cfd, me.data(), me.size()) < 0) _exit(3);
  ::close(cfd);
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) _exit(4);
  std::vector<char> buf(1 << 20);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
}
}  // namespace

pid_t TestCgroupV1::streamFileAndStay(const std::string& file) const {
  int p[2];
  if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(p[0]);
    joinAndStream(path_, file);
    (void)!::write(p[1], "x", 1);
    for (;;) ::pause();
  }
  ::close(p[1]);
  char c;
  ssize_t n = ::read(p[0], &c, 1);
  ::close(p[0]);
  if (n != 1) throw std::runtime_error("streaming child failed");
  return pid;
}

int TestCgroupV1::streamFile(const std::string& file) const {
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    joinAndStream(path_, file);
    _exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

WorkloadFile::WorkloadFile(uint64_t bytes) {
  char tmpl[] = "/var/tmp/memcg_exporter_test_workload_XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  path_ = tmpl;
  std::vector<char> buf(1 << 20, 'x');
  for (uint64_t done = 0; done < bytes; done += buf.size()) {
    if (::write(fd, buf.data(), buf.size()) < 0) {
      ::close(fd);
      throw std::runtime_error("write workload file failed");
    }
  }
  ::fsync(fd);
  ::close(fd);
  dropCache();
}

WorkloadFile::~WorkloadFile() { ::unlink(path_.c_str()); }

void WorkloadFile::dropCache() const {
  int fd = ::open(path_.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace memcg::test

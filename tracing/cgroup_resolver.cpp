#include "tracing/cgroup_resolver.h"

#include <dirent.h>

#include <vector>

#include <sys/stat.h>

#include "common/file.h"
#include "common/parse.h"

namespace memcg::tracing {

std::optional<std::string_view> parseProcCgroup(std::string_view text, int hierarchy_id) {
  std::string_view line;
  while (nextLine(text, line)) {
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    auto id = parseI64(line.substr(0, c1));
    if (!id) continue;
    std::string_view ctrls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view path = trimRight(line.substr(c2 + 1));
    if (hierarchy_id == 0) {
      if (*id == 0 && ctrls.empty()) return path;
    } else if (*id == hierarchy_id || listContains(ctrls, "memory")) {
      return path;
    }
  }
  return std::nullopt;
}

std::optional<int> parseMemoryHierarchyId(std::string_view text) {
  std::string_view line;
  while (nextLine(text, line)) {
    if (line.empty() || line[0] == '#') continue;
    // subsys_name hierarchy num_cgroups enabled (tab separated)
    std::string_view f[4];
    size_t n = 0;
    while (n < 4 && !line.empty()) {
      size_t b = line.find_first_not_of(" \t");
      if (b == std::string_view::npos) break;
      line.remove_prefix(b);
      size_t e = line.find_first_of(" \t");
      f[n++] = line.substr(0, e);
      line.remove_prefix(e == std::string_view::npos ? line.size() : e);
    }
    if (n < 4 || f[0] != "memory") continue;
    if (f[3] != "1") return std::nullopt;
    auto h = parseI64(f[1]);
    if (!h) return std::nullopt;
    return static_cast<int>(*h);
  }
  return std::nullopt;
}

ProcCgroupResolver::ProcCgroupResolver(std::string procfs, int hierarchy_id,
                                       std::string cgroup_mount)
    : procfs_(std::move(procfs)),
      hierarchy_id_(hierarchy_id),
      cgroup_mount_(std::move(cgroup_mount)) {}

std::optional<std::string> ProcCgroupResolver::resolve(int32_t tid) {
  if (tid <= 0) return std::nullopt;
  auto text = readWholeFile(procfs_ + "/" + std::to_string(tid) + "/cgroup");
  if (!text.ok()) return std::nullopt;
  auto p = parseProcCgroup(*text, hierarchy_id_);
  if (!p) return std::nullopt;
  return std::string(*p);
}

std::string ProcCgroupResolver::comm(int32_t tid) {
  if (tid <= 0) return {};
  auto text = readWholeFile(procfs_ + "/" + std::to_string(tid) + "/comm");
  if (!text.ok()) return {};
  return std::string(trimRight(*text));
}

uint64_t ProcCgroupResolver::idOf(const std::string& path) {
  if (cgroup_mount_.empty()) return 0;
  struct stat st {};
  if (::stat((cgroup_mount_ + path).c_str(), &st) != 0) return 0;
  return st.st_ino;
}

namespace {
std::optional<std::string> findIno(const std::string& mount, const std::string& rel,
                                   uint64_t id, int depth) {
  DIR* d = ::opendir((mount + rel).c_str());
  if (!d) return std::nullopt;
  std::vector<std::string> subdirs;
  while (dirent* de = ::readdir(d)) {
    if (de->d_type != DT_DIR || de->d_name[0] == '.') continue;
    std::string child = (rel == "/" ? "" : rel) + "/" + de->d_name;
    if (de->d_ino == id) {
      ::closedir(d);
      return child;
    }
    subdirs.push_back(std::move(child));
  }
  ::closedir(d);
  if (depth <= 0) return std::nullopt;
  for (const auto& s : subdirs) {
    if (auto p = findIno(mount, s, id, depth - 1)) return p;
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> ProcCgroupResolver::pathOfId(uint64_t id) {
  if (cgroup_mount_.empty() || id == 0) return std::nullopt;
  struct stat st {};
  if (::stat(cgroup_mount_.c_str(), &st) == 0 && st.st_ino == id) return std::string("/");
  return findIno(cgroup_mount_, "/", id, 16);
}

}  // namespace memcg::tracing

#include "cgroupfs/discovery.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "cgroupfs/file_names.h"
#include "cgroupfs/readers.h"
#include "common/duration.h"
#include "common/log.h"
#include "common/parse.h"

namespace memcg {
namespace {

using cgroupfs::CgroupDir;
using Clock = std::chrono::steady_clock;

// A cgroup2 directory of a hybrid host that did not exist when its v1 twin was
// first seen is looked for again after this long.
constexpr auto kPsiReprobe = std::chrono::seconds(30);

// mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
std::string unescapeMount(std::string_view s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) &&
        octal(s[i + 2]) && octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

bool fileExists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

bool controllersListMemory(const std::string& dir) {
  std::string buf;
  std::string_view content;
  if (cgroupfs::readFile(dir + "/cgroup.controllers", buf, content) !=
      cgroupfs::ReadStatus::kOk) {
    return false;
  }
  std::string_view rest = trimRight(content), tok;
  while (nextToken(rest, tok)) {
    if (tok == "memory") return true;
  }
  return false;
}

std::string stripSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string_view modeName(CgroupMode m) {
  switch (m) {
    case CgroupMode::kV1: return "v1";
    case CgroupMode::kV2: return "v2";
    case CgroupMode::kHybrid: return "hybrid";
  }
  return "v1";
}

Result<std::vector<MountEntry>> parseMountinfo(std::string_view text, std::string_view path) {
  // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
  std::vector<MountEntry> out;
  std::string_view rest = text, line;
  while (nextLine(rest, line)) {
    if (line.empty()) continue;
    std::string_view f = line, tok;
    std::string_view fields[5];
    for (auto& fld : fields) {
      if (!nextToken(f, tok)) return cgroupfs::malformed(path, line);
      fld = tok;
    }
    bool sep = false;
    while (nextToken(f, tok)) {
      if (tok == "-") {
        sep = true;
        break;
      }
    }
    std::string_view fstype, source, superOpts;
    if (!sep || !nextToken(f, fstype) || !nextToken(f, source)) {
      return cgroupfs::malformed(path, line);
    }
    if (!nextToken(f, superOpts)) superOpts = {};
    out.push_back(MountEntry{unescapeMount(fields[4]), std::string(fstype),
                             std::string(superOpts)});
  }
  return out;
}

Result<MountLayout> detectLayout(const std::string& cgroupfsRootIn,
                                 const std::string& procfsRoot) {
  const std::string root = stripSlash(cgroupfsRootIn);
  std::string buf;
  std::string_view content;
  Error err;
  std::string mi = procfsRoot + "/" + std::string(cgroupfs::kProcMountinfo);
  std::string v1Memory, unified;
  bool unifiedHasMemory = false;
  if (cgroupfs::readFile(mi, buf, content, &err) == cgroupfs::ReadStatus::kOk) {
    auto mounts = parseMountinfo(content, mi);
    if (!mounts) return mounts.error();
    for (const auto& m : *mounts) {
      if (!under(m.mountPoint, root)) continue;
      if (m.fsType == "cgroup" && v1Memory.empty() && listContains(m.superOptions, "memory")) {
        v1Memory = m.mountPoint;
      } else if (m.fsType == "cgroup2" && unified.empty()) {
        unified = m.mountPoint;
        unifiedHasMemory = controllersListMemory(unified);
      }
    }
  }
  if (v1Memory.empty() && unified.empty()) {
    // Not a mount point: a fixture tree or a copy. Probe its shape.
    if (fileExists(root + "/cgroup.controllers")) {
      unified = root;
      unifiedHasMemory = controllersListMemory(root);
    } else if (fileExists(root + "/unified/cgroup.controllers")) {
      unified = root + "/unified";
      unifiedHasMemory = controllersListMemory(unified);
    }
    if (fileExists(root + "/memory/memory.limit_in_bytes")) {
      v1Memory = root + "/memory";
    } else if (fileExists(root + "/memory.limit_in_bytes")) {
      v1Memory = root;
    }
  }
  if (!unified.empty() && unifiedHasMemory) {
    return MountLayout{CgroupMode::kV2, unified, {}};
  }
  if (!v1Memory.empty()) {
    if (!unified.empty()) return MountLayout{CgroupMode::kHybrid, v1Memory, unified};
    return MountLayout{CgroupMode::kV1, v1Memory, {}};
  }
  return makeError(ENOENT, root,
                   "no memory cgroup hierarchy found (no cgroup v1 memory mount and no "
                   "cgroup2 mount with the memory controller)");
}

Discovery::Discovery(DiscoveryOptions opts)
    : opts_(std::move(opts)), fdBudget_(std::make_shared<cgroupfs::FdBudget>(opts_.fdBudget)) {
  try {
    include_ = std::regex(opts_.include.empty() ? ".*" : opts_.include,
                          std::regex::ECMAScript | std::regex::optimize);
    if (!opts_.exclude.empty()) {
      exclude_.emplace(opts_.exclude, std::regex::ECMAScript | std::regex::optimize);
    }
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(std::string("bad cgroup include/exclude regex: ") + e.what());
  }
  if (opts_.maxDepth < 0) throw std::invalid_argument("--cgroup.max-depth must be >= 0");
  if (opts_.limit == 0) throw std::invalid_argument("--cgroup.limit must be > 0");
  auto layout = detectLayout(opts_.cgroupfsRoot, opts_.procfsRoot);
  if (!layout) throw std::invalid_argument(layout.error().message());
  layout_ = *layout;
  if (layout_.mode != CgroupMode::kV2)
    layout_.v1SwapAccounting = cgroupfs::v1SwapAccounting(layout_.memoryRoot);
}

bool Discovery::selected(const std::string& path) const {
  if (!std::regex_match(path, include_)) return false;
  return !(exclude_ && std::regex_match(path, *exclude_));
}

void Discovery::attachPsi(const std::string& path, Entry& e, Clock::time_point now) {
  if (layout_.mode == CgroupMode::kV2) {
    e.psiDir = e.dir;
    return;
  }
  if (layout_.mode != CgroupMode::kHybrid || e.psiDir) return;
  if (e.psiProbed != Clock::time_point{} && now - e.psiProbed < kPsiReprobe) return;
  e.psiProbed = now;
  if (!unifiedRootDir_) {
    auto d = CgroupDir::open(layout_.unifiedRoot, fdBudget_);
    if (!d) return;
    unifiedRootDir_ = std::move(*d);
  }
  if (path == "/") {
    e.psiDir = unifiedRootDir_;
    return;
  }
  auto d = CgroupDir::openAt(unifiedRootDir_->fd(), path.substr(1), layout_.unifiedRoot + path,
                             fdBudget_);
  if (d) e.psiDir = std::move(*d);
}

std::optional<Result<std::shared_ptr<const CgroupTree>>> Discovery::lastIfYounger(
    Clock::duration maxAge) const {
  std::lock_guard<std::mutex> g(treeMu_);
  if (!current_ || Clock::now() - lastWalkStart_ >= maxAge) return std::nullopt;
  if (lastError_) return Result<std::shared_ptr<const CgroupTree>>(*lastError_);
  return Result<std::shared_ptr<const CgroupTree>>(current_);
}

Result<std::shared_ptr<const CgroupTree>> Discovery::refresh() {
  const auto arrived = Clock::now();
  std::lock_guard<std::mutex> g(mu_);
  {
    std::lock_guard<std::mutex> t(treeMu_);
    if (current_ && lastWalkStart_ >= arrived) {  // a walk began after we came: share it
      if (lastError_) return *lastError_;
      return current_;
    }
  }
  {
    // Before the walk: a caller arriving from now on may expect a cgroup
    // this walk has already passed, and walks again.
    std::lock_guard<std::mutex> t(treeMu_);
    lastWalkStart_ = Clock::now();
  }
  auto r = walkLocked();
  std::lock_guard<std::mutex> t(treeMu_);
  if (r.ok()) {
    current_ = *r;
    lastError_.reset();
  } else {
    lastError_ = r.error();
  }
  return r;
}

Result<std::shared_ptr<const CgroupTree>> Discovery::walkLocked() {
  const auto now = Clock::now();
  const uint64_t gen = ++generation_;

  auto tree = std::make_shared<CgroupTree>();
  tree->layout = layout_;
  tree->generation = gen;

  // The root: reopen if it was replaced (a remount).
  {
    struct stat st {};
    if (::stat(layout_.memoryRoot.c_str(), &st) != 0) {
      return makeError(errno, layout_.memoryRoot, "memory cgroup root");
    }
    Entry& e = entries_["/"];
    if (!e.dir || e.dir->inode() != st.st_ino) {
      auto d = CgroupDir::open(layout_.memoryRoot, fdBudget_);
      if (!d) return d.error();
      e = Entry{};
      e.dir = std::move(*d);
      e.selected = selected("/");
    }
    attachPsi("/", e, now);
    e.seen = gen;
  }

  struct Pending {
    std::string path;
    int depth;
  };
  std::vector<Pending> queue{{"/", 0}};
  std::vector<std::pair<std::string, ino_t>> children;
  bool full = false;
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    // Copy: `queue` grows below.
    const std::string path = queue[qi].path;
    const int depth = queue[qi].depth;
    Entry& e = entries_[path];
    if (e.selected) {
      if (tree->cgroups.size() < opts_.limit) {
        tree->cgroups.push_back(Cgroup{path, e.dir->inode(), depth, e.dir, e.psiDir});
      } else {
        ++tree->dropped;
        full = true;
      }
    }
    // Once the limit is reached nothing deeper is walked.
    if (depth >= opts_.maxDepth || full) continue;

    children.clear();
    const int fd = e.dir->fd();
    if (::lseek(fd, 0, SEEK_SET) != 0) continue;
    if (dents_.size() < 32768) dents_.resize(32768);
    for (;;) {
      ssize_t n = ::getdents64(fd, dents_.data(), dents_.size());
      if (n <= 0) break;  // 0: end; <0: the cgroup went away under us
      for (ssize_t off = 0; off < n;) {
        auto* d = reinterpret_cast<struct dirent64*>(dents_.data() + off);
        off += d->d_reclen;
        std::string_view name(d->d_name);
        if (name == "." || name == "..") continue;
        unsigned char type = d->d_type;
        if (type == DT_UNKNOWN) {
          struct stat st {};
          if (::fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_DIR) children.emplace_back(std::string(name), d->d_ino);
      }
    }
    std::sort(children.begin(), children.end());
    for (auto& [name, ino] : children) {
      std::string childPath = path == "/" ? "/" + name : path + "/" + name;
      Entry& c = entries_[childPath];
      if (!c.dir || c.dir->inode() != ino) {
        // New, or removed and recreated under the same name: a new cgroup.
        auto d = CgroupDir::openAt(fd, name, layout_.memoryRoot + childPath, fdBudget_);
        if (!d) {
          entries_.erase(childPath);
          continue;  // vanished between readdir and open: normal
        }
        c = Entry{};
        c.dir = std::move(*d);
        c.selected = selected(childPath);
      }
      attachPsi(childPath, c, now);
      c.seen = gen;
      queue.push_back({std::move(childPath), depth + 1});
    }
  }
  // Forget cgroups this walk did not see; their descriptors close when the
  // last tree holding them is released.
  std::erase_if(entries_, [gen](const auto& kv) { return kv.second.seen != gen; });
  return std::shared_ptr<const CgroupTree>(tree);
}

std::shared_ptr<const CgroupTree> Discovery::current() const {
  std::lock_guard<std::mutex> g(treeMu_);
  return current_;
}

std::shared_ptr<const cgroupfs::CgroupDir> Discovery::find(std::string_view path) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = entries_.find(std::string(path));
  return it == entries_.end() ? nullptr : it->second.dir;
}

FlagList discoveryFlags(DiscoveryOptions& o) {
  return {
      {"path.cgroupfs", "cgroupfs mount point (the parent of the hierarchies).", false,
       [&o](const std::string& v) { o.cgroupfsRoot = v; }, "/sys/fs/cgroup"},
      {"path.procfs", "procfs mount point.", false,
       [&o](const std::string& v) { o.procfsRoot = v; }, "/proc"},
      {"cgroup.include", "Regex of cgroup paths to export (whole match, e.g. \"/kubepods.*\").",
       false, [&o](const std::string& v) { o.include = checkFlagRegex("cgroup.include", v); }, ".*"},
      {"cgroup.exclude", "Regex of cgroup paths not to export (whole match).", false,
       [&o](const std::string& v) { o.exclude = checkFlagRegex("cgroup.exclude", v); }, ""},
      {"cgroup.max-depth", "Deepest cgroup level walked (0: the root only).", false,
       [&o](const std::string& v) { o.maxDepth = parseFlagInt("cgroup.max-depth", v, 0, 64); },
       "8"},
      {"cgroup.limit",
       "Most cgroups exported; the rest are counted in memcg_exporter_cgroups_dropped.", false,
       [&o](const std::string& v) {
         o.limit = static_cast<size_t>(parseFlagInt("cgroup.limit", v, 1, 1000000));
       },
       "2000"},
      {"cgroup.refresh-interval",
       "How often the cgroup hierarchy is walked, off the scrape path (0: on every scrape).",
       false,
       [&o](const std::string& v) {
         o.refreshInterval = std::chrono::milliseconds(
             durationFlag("cgroup.refresh-interval", v, 0, 3600000));
       },
       "5s"},
      deprecatedMsFlag("cgroup.refresh-interval-ms", "cgroup.refresh-interval", 0, 3600000,
                       [&o](int64_t ms) { o.refreshInterval = std::chrono::milliseconds(ms); },
                       "5000"),
      {"cgroup.fd-budget",
       "Descriptors kept open for cgroup directories and files at most; past it each file is "
       "opened, read and closed per scrape (memcg_exporter_fds_kept, "
       "memcg_exporter_file_reads_uncached_total). 0: RLIMIT_NOFILE less "
       "--web.max-connections less 256.",
       false,
       [&o](const std::string& v) { o.fdBudget = parseFlagInt("cgroup.fd-budget", v, 0, 1 << 30); },
       "0"},
  };
}

}  // namespace memcg

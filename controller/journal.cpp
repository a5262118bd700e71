#include "controller/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "cgroupfs/cgroup_dir.h"
#include "common/log.h"
#include "common/parse.h"

namespace memcg::controller {
namespace {

Status writeAll(int fd, std::string_view s, const std::string& path) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return makeError(errno, path, "journal write");
    }
    s.remove_prefix(static_cast<size_t>(n));
  }
  return Ok{};
}

std::string dirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::string toJsonLine(const JournalEntry& e) {
  nlohmann::json j = {{"op", "lower"},
                      {"seq", e.seq},
                      {"cgroup", e.cgroup},
                      {"dir", e.dir},
                      {"inode", e.inode},
                      {"original", e.original},
                      {"original_unlimited", e.originalUnlimited},
                      {"lowered", e.lowered},
                      {"ts_ms", e.tsMs}};
  return j.dump() + "\n";
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string& path) {
  std::unique_ptr<Journal> j(new Journal(path));
  j->fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!j->fd_.valid()) return makeError(errno, path, "cannot open the controller journal");
  std::string buf;
  std::string_view content;
  Error err;
  if (cgroupfs::readFile(path, buf, content, &err) == cgroupfs::ReadStatus::kError) return err;
  std::string_view rest = content, line;
  while (nextLine(rest, line)) {
    if (line.empty()) continue;
    auto v = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!v.is_object() || !v.contains("op") || !v.contains("seq") ||
        !v["seq"].is_number_unsigned()) {
      ++j->skipped_;
      continue;
    }
    uint64_t seq = v["seq"].get<uint64_t>();
    j->nextSeq_ = std::max(j->nextSeq_, seq + 1);
    if (v["op"] == "clear") {
      j->pending_.erase(seq);
      continue;
    }
    // A field of another type is as unreadable as a torn line (json::value()
    // would throw, and the journal is read at every start).
    auto is = [&](const char* k, bool (nlohmann::json::*type)() const noexcept) {
      return !v.contains(k) || (v[k].*type)();
    };
    using J = nlohmann::json;
    if (v["op"] != "lower" || !is("cgroup", &J::is_string) || !is("dir", &J::is_string) ||
        !is("inode", &J::is_number_unsigned) || !is("original", &J::is_number_unsigned) ||
        !is("original_unlimited", &J::is_boolean) ||
        !is("lowered", &J::is_number_unsigned) || !is("ts_ms", &J::is_number_integer)) {
      ++j->skipped_;
      continue;
    }
    JournalEntry e;
    e.seq = seq;
    e.cgroup = v.value("cgroup", "");
    e.dir = v.value("dir", "");
    e.inode = v.value("inode", uint64_t{0});
    e.original = v.value("original", uint64_t{0});
    e.originalUnlimited = v.value("original_unlimited", false);
    e.lowered = v.value("lowered", uint64_t{0});
    e.tsMs = v.value("ts_ms", int64_t{0});
    if (e.dir.empty() || e.lowered == 0) {
      ++j->skipped_;
      continue;
    }
    j->pending_[seq] = std::move(e);
  }
  if (j->skipped_ > 0) {
    log::warn("controller journal: skipped unreadable lines",
              "path=" + log::quote(path) + " lines=" + std::to_string(j->skipped_));
  }
  return j;
}

Status Journal::append(const std::string& line, bool sync) {
  auto st = writeAll(fd_.get(), line, path_);
  if (!st) return st;
  if (sync && ::fdatasync(fd_.get()) != 0) return makeError(errno, path_, "journal fdatasync");
  return Ok{};
}

Result<uint64_t> Journal::record(JournalEntry e) {
  std::lock_guard<std::mutex> g(mu_);
  e.seq = nextSeq_++;
  auto st = append(toJsonLine(e), /*sync=*/true);
  if (!st) return st.error();
  uint64_t seq = e.seq;
  pending_[seq] = std::move(e);
  return seq;
}

Status Journal::clear(uint64_t seq) {
  std::lock_guard<std::mutex> g(mu_);
  pending_.erase(seq);
  nlohmann::json j = {{"op", "clear"}, {"seq", seq}};
  return append(j.dump() + "\n", /*sync=*/false);
}

std::optional<uint64_t> Journal::findArmed(const std::string& dir, uint64_t inode,
                                           bool originalUnlimited, uint64_t original,
                                           uint64_t lowered) const {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [seq, e] : pending_) {
    if (e.dir == dir && e.inode == inode && e.originalUnlimited == originalUnlimited &&
        (originalUnlimited || e.original == original) && e.lowered == lowered)
      return seq;
  }
  return std::nullopt;
}

void Journal::clearDir(const std::string& dir) {
  std::vector<uint64_t> seqs;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [seq, e] : pending_) {
      if (e.dir == dir) seqs.push_back(seq);
    }
  }
  for (uint64_t s : seqs) (void)clear(s);
}

std::vector<JournalEntry> Journal::pending() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<JournalEntry> out;
  for (const auto& [_, e] : pending_) out.push_back(e);
  return out;
}

Status Journal::compact() {
  std::lock_guard<std::mutex> g(mu_);
  std::string tmp = path_ + ".tmp";
  Fd t(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!t.valid()) return makeError(errno, tmp, "journal compact");
  std::string all;
  for (const auto& [_, e] : pending_) all += toJsonLine(e);
  auto st = writeAll(t.get(), all, tmp);
  if (!st) return st;
  if (::fsync(t.get()) != 0) return makeError(errno, tmp, "journal fsync");
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return makeError(errno, path_, "journal rename");
  Fd d(::open(dirOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.valid()) ::fsync(d.get());
  Fd nfd(::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC));
  if (!nfd.valid()) return makeError(errno, path_, "journal reopen");
  fd_ = std::move(nfd);
  return Ok{};
}

}  // namespace memcg::controller

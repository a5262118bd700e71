// The v1 limit-nudge journal: what the controller lowered, so that a crash
// between lowering memory.limit_in_bytes and restoring it is undone on the
// next start.
//
// Format: an append-only file of JSON lines,
//   {"op":"lower","seq":7,"cgroup":"/a","dir":"/sys/fs/cgroup/memory/a",
//    "inode":123,"original":268435456,"original_unlimited":false,
//    "lowered":134217728,"ts_ms":1700000000000}
//   {"op":"clear","seq":7}
// A "lower" line is appended and fdatasync'd BEFORE the limit is lowered; a
// "clear" line is appended (not synced) after the restore. A lost clear is
// harmless: recovery restores only while the limit still reads exactly the
// lowered value in the same cgroup (same inode). A torn last line (a crash in
// the append) is ignored: its lowering never happened, since the lowering
// waits for the sync. compact() rewrites the file with the pending entries
// only (tmp file, fsync, rename, fsync of the directory).
//
// Armed entries: the lowered value of a protection is limit - target margin
// whatever the usage (unless a clamp applies), so the actuator may keep an
// entry pending across nudges and reuse it while {original, lowered} match,
// instead of an fdatasync per nudge (ActuatorOptions::keepArmed). It is
// cleared when the protection ends or the values change. Its only cost: if an
// admin sets the limit to exactly the lowered value while the entry is armed
// and the exporter then crashes, the replay puts the original back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace memcg::controller {

struct JournalEntry {
  uint64_t seq = 0;
  std::string cgroup;        ///< label, for logs
  std::string dir;           ///< filesystem path of the cgroup directory
  uint64_t inode = 0;        ///< of that directory: a recreated cgroup is not ours
  bool originalUnlimited = false;
  uint64_t original = 0;     ///< bytes; meaningless when originalUnlimited
  uint64_t lowered = 0;      ///< bytes as the kernel reads it back (page-rounded)
  int64_t tsMs = 0;
};

class Journal {
 public:
  /// Opens (creating it and its directory's last component is not created)
  /// the journal and loads its pending entries.
  static Result<std::unique_ptr<Journal>> open(const std::string& path);

  /// Appends a "lower" entry and syncs it; assigns and returns its seq.
  Result<uint64_t> record(JournalEntry e);
  /// Appends a "clear" for seq (no sync, see the file comment).
  Status clear(uint64_t seq);
  /// The seq of a pending entry for exactly this nudge, if one is armed.
  std::optional<uint64_t> findArmed(const std::string& dir, uint64_t inode, bool originalUnlimited,
                                    uint64_t original, uint64_t lowered) const;
  /// Clears (no sync) every pending entry for the cgroup directory `dir`.
  void clearDir(const std::string& dir);
  /// Entries lowered and not cleared, oldest first.
  std::vector<JournalEntry> pending() const;
  /// Rewrites the file with the pending entries only.
  Status compact();

  const std::string& path() const { return path_; }
  /// Lines that did not parse at open (a torn tail); for tests and logs.
  size_t skippedLines() const { return skipped_; }

 private:
  explicit Journal(std::string path) : path_(std::move(path)) {}
  Status append(const std::string& line, bool sync);

  std::string path_;
  mutable std::mutex mu_;
  Fd fd_;
  uint64_t nextSeq_ = 1;
  std::map<uint64_t, JournalEntry> pending_;
  size_t skipped_ = 0;
};

std::string toJsonLine(const JournalEntry& e);

}  // namespace memcg::controller

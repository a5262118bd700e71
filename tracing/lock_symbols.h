// Kernel symbols for lock addresses and sampled callers (lock_stats.h).
//
// Kernel interface: /proc/kallsyms, "<hex address> <type> <name>[\t[module]]"
// per line, unsorted across modules. Readers without CAP_SYSLOG (or with
// kernel.kptr_restrict=2) see every address as 0: then nothing is loaded and
// callers print addresses as hex. Root sees real addresses.
// Two tables: text symbols (t/T/w/W: stack frames) and data symbols
// (d/D/b/B/r/R: static locks, e.g. a `static DEFINE_MUTEX(x)`; a lock inside
// a static struct shows as "struct_symbol+0xoff"). Data symbols are listed
// only with CONFIG_KALLSYMS_ALL; without it (6.18 on this VM: ~35 data
// symbols) a lock address would land on an unrelated distant symbol, so
// data lookups need a dense table (>= kMinDataSymbols) and return nothing
// otherwise. Heap locks (inside run-time allocations) never resolve.
// kallsyms has no sizes: an address belongs to the nearest symbol below it
// if there is a symbol above it and the distance is under kMaxSymbolSpan.
// Memory: ~12 bytes per symbol plus names (~4 MiB for 120k symbols); loaded
// lazily, once, when a lock report has addresses to name.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace memcg::tracing {

class Kallsyms {
 public:
  static constexpr uint64_t kMaxSymbolSpan = 1u << 20;
  static constexpr size_t kMinDataSymbols = 1000;

  /// Parses kallsyms text; lines that do not parse, and 0 addresses, are
  /// skipped. Data symbols are kept if there are at least `min_data_symbols`.
  static Kallsyms parse(std::string_view text, size_t min_data_symbols = kMinDataSymbols);
  /// Reads and parses `path` (normally <procfs>/kallsyms).
  static Result<Kallsyms> load(const std::string& path);

  /// False when no address was visible (all 0: kptr_restrict, no CAP_SYSLOG).
  bool usable() const { return !text_.addrs.empty(); }

  /// "name+0xoff" ("name" at offset 0) of the function containing `addr`.
  std::optional<std::string> symbolizeText(uint64_t addr) const;
  /// The function's name only (to skip the tracing machinery's own frames).
  std::optional<std::string_view> textName(uint64_t addr) const;
  /// "name+0xoff" of the static object containing `addr` (dense tables only).
  std::optional<std::string> symbolizeData(uint64_t addr) const;

 private:
  struct Table {
    std::vector<uint64_t> addrs;  // sorted
    std::vector<uint32_t> names;  // offsets into names_
    std::optional<size_t> find(uint64_t addr) const;
  };
  std::string format(const Table& t, size_t i, uint64_t addr) const;
  Table text_;
  Table data_;
  std::string names_;  // NUL-separated
};

/// A Kallsyms read once, on first use (thread-safe): the Tracer owns one for
/// its lock reports, so each tracer reads its own procfs.
class KallsymsOnce {
 public:
  /// The symbols of `path` (normally <procfs>/kallsyms), read by the first
  /// call; later calls return the same (their path is ignored). nullptr if
  /// the file could not be read.
  const Kallsyms* get(const std::string& path);

 private:
  std::once_flag once_;
  std::unique_ptr<Kallsyms> syms_;
};

/// "0x" + lowercase hex.
std::string hexAddr(uint64_t addr);

}  // namespace memcg::tracing

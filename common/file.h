// Whole-file reads and writes for kernel pseudo-files (cgroupfs, procfs,
// tracefs): the one file reader of the project.
//
// preadAll() reads from offset 0 until read returns 0: a seq_file of many
// records (/proc/vmstat, /proc/self/mountinfo, tracefs files) hands back at
// most about a page per read, whatever the caller's buffer.
//
// preadSingleRecord() is the cheaper read for cgroupfs files: each is one
// kernfs seq_file record (cftype seq_show), which the kernel renders whole
// (growing its buffer) and copies in one read, so a short read is the end of
// the file; regular files (fixture trees) do the same. A full buffer is grown
// and the read restarted from 0, so the content is one generation. It saves
// the second read(2) per file on the scrape path. EINTR is retried by both.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg {

/// Reads the whole content of `fd` into `buf` (grown as needed); `len` is its
/// length. Returns 0 or an errno.
int preadAll(int fd, std::string& buf, size_t& len);

/// The same for a single-record kernfs file (cgroupfs), in one read.
int preadSingleRecord(int fd, std::string& buf, size_t& len);

/// Reads a whole file. Errors carry errno and the path.
Result<std::string> readWholeFile(const std::string& path);

/// Writes `data` to an existing file in one write(2) (kernel files take one
/// value per write). Errors carry errno and the path.
Status writeWholeFile(const std::string& path, std::string_view data);

}  // namespace memcg

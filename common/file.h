// Whole-file reads and writes for kernel pseudo-files (cgroupfs, procfs,
// tracefs): the one file reader of the project.
//
// preadAll() reads from offset 0 into a reused buffer. A short read means end
// of file: seq_file (every cgroupfs and procfs file read here) fills the
// caller's buffer until its content is exhausted, and regular files (fixtures)
// do the same. A full buffer is grown and the read restarted from 0, so the
// content is always one consistent generation. EINTR is retried.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg {

/// Reads the whole content of `fd` into `buf` (grown as needed); `len` is its
/// length. Returns 0 or an errno.
int preadAll(int fd, std::string& buf, size_t& len);

/// Reads a whole file. Errors carry errno and the path.
Result<std::string> readWholeFile(const std::string& path);

/// Writes `data` to an existing file in one write(2) (kernel files take one
/// value per write). Errors carry errno and the path.
Status writeWholeFile(const std::string& path, std::string_view data);

}  // namespace memcg

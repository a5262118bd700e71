#include "cgroupfs/usage_limit.h"

#include <cerrno>

namespace memcg::cgroupfs {
namespace {

Result<std::string_view> readFile(const CgroupDir& dir, FileId id, std::string& buf) {
  std::string_view out;
  Error err;
  switch (dir.read(id, buf, out, &err)) {
    case ReadStatus::kOk:
      return out;
    case ReadStatus::kGone:
      return makeError(ENOENT, dir.path(), "cgroup removed");
    case ReadStatus::kAbsent:
      // Not gone: the cgroup is there, the file is not (ENODATA, so gone() is false).
      return makeError(ENODATA, dir.path() + "/" + std::string(fileName(id)),
                       "no such file");
    case ReadStatus::kError:
      break;
  }
  return err;
}

Result<Limit> readLimit(const CgroupDir& dir, FileId id, std::string& buf) {
  auto c = readFile(dir, id, buf);
  if (!c.ok()) return c.error();
  return parseLimit(*c, fileName(id));
}

}  // namespace

Result<UsageLimit> readUsageLimit(const CgroupDir& dir, bool v2, std::string& buf) {
  UsageLimit r;
  const FileId usageId = v2 ? FileId::kV2Current : FileId::kV1Usage;
  auto u = readFile(dir, usageId, buf);
  if (!u.ok()) return u.error();
  auto usage = parseSingle(*u, fileName(usageId));
  if (!usage.ok()) return usage.error();
  r.usage = *usage;
  auto l = readLimit(dir, v2 ? FileId::kV2Max : FileId::kV1Limit, buf);
  if (!l.ok()) return l.error();
  r.limit = *l;
  if (v2 && r.limit.unlimited) {
    // memory.high is optional here: a cgroup without it keeps "unlimited".
    auto h = readLimit(dir, FileId::kV2High, buf);
    if (h.ok()) r.limit = *h;
  }
  return r;
}

}  // namespace memcg::cgroupfs

#include "collectors/taskstats/delayacct_sysctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "common/fd.h"
#include "common/log.h"
#include "common/file.h"
#include "common/parse.h"

namespace memcg::taskstats {
namespace {

std::string sysctlPath(const std::string& procfs) {
  std::string p = procfs;
  if (!p.empty() && p.back() != '/') p += '/';
  return p + kTaskDelayacctFile;
}

// Delays are counted from the moment the switch is on; the kernel's
// documentation puts it as "only tasks started after" it are accounted.
constexpr const char* kLateNote =
    "delays are accounted only from now on; tasks started earlier show partial figures";

}  // namespace

Result<bool> readTaskDelayacct(const std::string& procfs) {
  const std::string path = sysctlPath(procfs);
  auto text = readWholeFile(path);
  if (!text.ok()) return text.error();
  auto v = parseU64(trimRight(*text));
  if (!v || *v > 1) return makeError(EINVAL, path, *text);
  return *v == 1;
}

Status writeTaskDelayacct(bool on, const std::string& procfs) {
  const std::string path = sysctlPath(procfs);
  return writeWholeFile(path, on ? "1" : "0");
}

DelayAcctStatus ensureTaskDelayacct(bool enable, const std::string& procfs) {
  DelayAcctStatus st;
  auto cur = readTaskDelayacct(procfs);
  if (!cur.ok()) {
    st.note = "cannot read kernel.task_delayacct: " + cur.error().message();
    return st;
  }
  st.known = true;
  st.enabled = *cur;
  if (st.enabled) {
    st.note = "delay accounting is on";
    return st;
  }
  if (!enable) {
    st.note =
        "delay accounting is off (kernel.task_delayacct=0): delays other than cpu read 0";
    return st;
  }
  if (auto s = writeTaskDelayacct(true, procfs); !s.ok()) {
    st.note = "cannot switch on kernel.task_delayacct: " + s.error().message();
    return st;
  }
  auto after = readTaskDelayacct(procfs);
  st.enabled = after.ok() && *after;
  st.enabled_by_exporter = st.enabled;
  if (st.enabled) {
    st.enabled_at_unix = static_cast<int64_t>(std::time(nullptr));
    st.note = std::string("switched on kernel.task_delayacct; ") + kLateNote;
    log::info("switched on delay accounting",
              "sysctl=kernel.task_delayacct note=" + log::quote(kLateNote));
  } else {
    st.note = "kernel.task_delayacct did not stay on";
  }
  return st;
}

}  // namespace memcg::taskstats

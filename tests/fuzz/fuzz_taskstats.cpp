// TASKSTATS generic-netlink replies (collectors/taskstats/taskstats_format.h):
// a datagram split into messages, each parsed as a TASKSTATS message, a
// CTRL_CMD_GETFAMILY reply and a bare struct taskstats, and what parses
// rendered as the /api/v1/delays table. Seeds: tests/fixtures/taskstats
// (family id 31).
#include <nlohmann/json.hpp>

#include "collectors/taskstats/delay_table.h"
#include "collectors/taskstats/taskstats_format.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;
using namespace memcg::taskstats;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  DelayTable table;
  table.cgroup = "/fuzz";
  auto add = [&](const TaskStats& s, uint32_t pid) {
    DelayTableRow row;
    row.pid = pid;
    row.comm = s.comm;
    row.stats = s;
    table.rows.push_back(std::move(row));
  };
  (void)forEachNetlinkMessage(in, [&](std::span<const uint8_t> msg) {
    if (auto m = parseTaskstatsMessage(msg, 31); m.ok()) {
      if (m->pid_stats) add(*m->pid_stats, m->pid.value_or(0));
      if (m->tgid_stats) add(*m->tgid_stats, m->tgid.value_or(0));
    }
    (void)parseFamilyReply(msg);
  });
  if (auto s = parseTaskstatsStruct(in); s.ok()) add(*s, 1);
  std::string out = delayTableToJson(table).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  FUZZ_CHECK(!out.empty());
  return 0;
}

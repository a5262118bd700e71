// Development tool: prints (or saves) the raw TASKSTATS reply for a pid/tgid,
// to refresh the captured fixtures in tests/fixtures/taskstats/.
//   taskstats_capture pid|tgid <id> [out.bin]
//   taskstats_capture exits <outdir>   exit records of a 1- and a 3-thread child
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/taskstats_client.h"
#include "common/parse.h"

using namespace memcg::taskstats;

static void spin(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile unsigned x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

static int captureExits(const TaskstatsClient& client, const std::string& dir) {
  auto l = ExitListener::open(client.familyId());
  if (!l.ok()) {
    std::fprintf(stderr, "%s\n", l.error().message().c_str());
    return 1;
  }
  pid_t single = fork();
  if (single == 0) {
    spin(20);
    _exit(3);
  }
  pid_t multi = fork();
  if (multi == 0) {
    std::vector<std::thread> ts;
    for (int i = 0; i < 2; ++i) ts.emplace_back([] { spin(20); });
    for (auto& t : ts) t.join();
    spin(5);
    _exit(0);
  }
  waitpid(single, nullptr, 0);
  waitpid(multi, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int n = 0;
  auto r = l->drainRaw([&](std::span<const uint8_t> d) {
    auto m = parseTaskstatsMessage(d, client.familyId());
    if (!m.ok() || !m->pid_stats) return;
    uint32_t tgid = m->pid_stats->ac_tgid;
    if (tgid != uint32_t(single) && tgid != uint32_t(multi)) return;
    std::string name = dir + "/exit_" + (tgid == uint32_t(single) ? "single" : "multi") +
                       "_" + std::to_string(n++) + ".bin";
    FILE* f = std::fopen(name.c_str(), "wb");
    if (!f) return;
    std::fwrite(d.data(), 1, d.size(), f);
    std::fclose(f);
    std::printf("%s: pid=%u tgid=%u flag=0x%x aggr_tgid=%d exitcode=%u\n", name.c_str(),
                *m->pid, tgid, m->pid_stats->ac_flag, m->tgid_stats.has_value(),
                m->pid_stats->exitcode);
  });
  return r.ok() ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "exits") == 0) {
    auto client = TaskstatsClient::open();
    if (!client.ok()) return 1;
    return captureExits(*client, argv[2]);
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s pid|tgid <id> [out.bin]\n", argv[0]);
    return 2;
  }
  IdKind kind = std::strcmp(argv[1], "tgid") == 0 ? IdKind::kTgid : IdKind::kPid;
  auto id = memcg::parseU64(argv[2]);
  if (!id) return 2;
  auto client = TaskstatsClient::open();
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.error().message().c_str());
    return 1;
  }
  auto raw = client->queryRaw(static_cast<uint32_t>(*id), kind);
  if (!raw.ok()) {
    std::fprintf(stderr, "%s\n", raw.error().message().c_str());
    return 1;
  }
  if (argc > 3) {
    FILE* f = std::fopen(argv[3], "wb");
    if (!f || std::fwrite(raw->data(), 1, raw->size(), f) != raw->size()) return 1;
    std::fclose(f);
  }
  auto m = parseTaskstatsMessage(*raw, client->familyId());
  std::printf("family=%u datagram=%zu bytes\n", client->familyId(), raw->size());
  if (!m.ok()) {
    std::printf("parse error: %s\n", m.error().message().c_str());
    return 1;
  }
  if (m->error) {
    std::printf("error: %s\n", std::strerror(m->error));
    return 1;
  }
  const TaskStats& ts = m->pid_stats ? *m->pid_stats : *m->tgid_stats;
  std::printf("version=%u struct_len=%u comm=%s pid=%u tgid=%u\n", ts.version,
              ts.struct_len, ts.comm.c_str(), ts.ac_pid, ts.ac_tgid);
  for (const auto& c : kDelayClasses) {
    const DelayCounter& d = ts[c.cls];
    std::printf("%-10s present=%d count=%llu total_ns=%llu max_ns=%s%llu\n",
                std::string(c.kernel_name).c_str(), ts.has(c.cls),
                (unsigned long long)d.count, (unsigned long long)d.total_ns,
                ts.hasMax(c.cls) ? "" : "(absent)", (unsigned long long)d.max_ns);
  }
  return 0;
}

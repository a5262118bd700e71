#include "collectors/taskstats/taskstats_client.h"

#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/file.h"
#include "common/parse.h"

namespace memcg::taskstats {
namespace {

constexpr const char* kPath = "netlink:TASKSTATS";
constexpr size_t kDatagramSize = 8192;  // one reply is ~0.6 KiB (v17)

void appendRequest(std::vector<uint8_t>& b, uint16_t type, uint16_t flags, uint32_t seq,
                   uint8_t cmd, uint8_t version, uint16_t attr, const void* data,
                   size_t len) {
  const size_t attr_len = NLA_HDRLEN + len;
  const size_t msg_len = NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(attr_len);
  const size_t start = b.size();
  b.resize(start + NLMSG_ALIGN(msg_len), 0);
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(msg_len);
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  genlmsghdr g{};
  g.cmd = cmd;
  g.version = version;
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(attr_len);
  a.nla_type = attr;
  uint8_t* p = b.data() + start;
  std::memcpy(p, &h, sizeof(h));
  std::memcpy(p + NLMSG_HDRLEN, &g, sizeof(g));
  std::memcpy(p + NLMSG_HDRLEN + GENL_HDRLEN, &a, sizeof(a));
  std::memcpy(p + NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN, data, len);
}

Result<Fd> openSocket(int rcvbuf) {
  Fd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
  if (!fd.valid()) return makeError(errno, kPath, "socket(AF_NETLINK, NETLINK_GENERIC)");
  if (rcvbuf > 0) {
    // SO_RCVBUFFORCE needs CAP_NET_ADMIN, which the queries need anyway.
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) !=
        0) {
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
  }
  timeval tv{2, 0};  // never hang a scrape on a lost reply
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return makeError(errno, kPath, "bind");
  }
  return fd;
}

Status sendAll(int fd, const std::vector<uint8_t>& b) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  for (;;) {
    ssize_t n = ::sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                         sizeof(kernel));
    if (n >= 0) return Ok{};
    if (errno != EINTR) return makeError(errno, kPath, "sendto");
  }
}

// Receives up to `max` datagrams from the kernel into `buf` (kDatagramSize
// each). Blocks for the first unless `dontwait`. Returns the sizes; a
// datagram truncated by the buffer is reported with size 0.
Result<std::vector<size_t>> receive(int fd, std::vector<uint8_t>& buf, size_t max,
                                    bool dontwait) {
  max = std::max<size_t>(1, std::min<size_t>(max, 64));
  buf.resize(max * kDatagramSize);
  std::vector<mmsghdr> msgs(max);
  std::vector<iovec> iov(max);
  std::vector<sockaddr_nl> from(max);
  for (size_t i = 0; i < max; ++i) {
    iov[i] = {buf.data() + i * kDatagramSize, kDatagramSize};
    msgs[i].msg_hdr = {};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &from[i];
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_nl);
  }
  int n;
  do {
    n = ::recvmmsg(fd, msgs.data(), static_cast<unsigned>(max),
                   dontwait ? MSG_DONTWAIT : MSG_WAITFORONE, nullptr);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return makeError(errno, kPath, "recvmmsg");
  std::vector<size_t> sizes(n);
  for (int i = 0; i < n; ++i) {
    // Only the kernel (port 0) may answer; drop anything a process sent us.
    bool trunc = msgs[i].msg_hdr.msg_flags & MSG_TRUNC;
    sizes[i] = (trunc || from[i].nl_pid != 0) ? 0 : msgs[i].msg_len;
  }
  return sizes;
}

}  // namespace

Result<TaskstatsClient> TaskstatsClient::open(int rcvbuf) {
  auto fd = openSocket(rcvbuf);
  if (!fd.ok()) return fd.error();
  std::vector<uint8_t> req;
  static constexpr char kName[] = TASKSTATS_GENL_NAME;
  appendRequest(req, GENL_ID_CTRL, NLM_F_REQUEST, 1, CTRL_CMD_GETFAMILY, 1,
                CTRL_ATTR_FAMILY_NAME, kName, sizeof(kName));
  if (auto s = sendAll(fd->get(), req); !s.ok()) return s.error();
  std::vector<uint8_t> buf;
  auto sizes = receive(fd->get(), buf, 1, false);
  if (!sizes.ok()) return sizes.error();
  if ((*sizes)[0] == 0) return makeError(EMSGSIZE, kPath, "bad CTRL_CMD_GETFAMILY reply");
  auto family = parseFamilyReply(std::span<const uint8_t>(buf.data(), (*sizes)[0]));
  if (!family.ok()) return family.error();
  return TaskstatsClient(std::move(fd.value()), *family);
}

Status TaskstatsClient::sendBatch(std::span<const uint32_t> ids, IdKind kind,
                                  uint32_t first_seq) {
  send_buf_.clear();
  const uint16_t attr =
      kind == IdKind::kPid ? TASKSTATS_CMD_ATTR_PID : TASKSTATS_CMD_ATTR_TGID;
  for (size_t i = 0; i < ids.size(); ++i) {
    appendRequest(send_buf_, family_, NLM_F_REQUEST, first_seq + static_cast<uint32_t>(i),
                  TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION, attr, &ids[i],
                  sizeof(uint32_t));
  }
  return sendAll(fd_.get(), send_buf_);
}

Status TaskstatsClient::queryMany(std::span<const uint32_t> ids, IdKind kind,
                                  const QueryFn& fn, size_t batch) {
  batch = std::max<size_t>(1, std::min<size_t>(batch, 64));
  std::vector<std::optional<Result<TaskStats>>> got;
  for (size_t start = 0; start < ids.size(); start += batch) {
    auto chunk = ids.subspan(start, std::min(batch, ids.size() - start));
    const uint32_t first = seq_;
    seq_ += static_cast<uint32_t>(chunk.size());
    if (auto s = sendBatch(chunk, kind, first); !s.ok()) return s;
    got.assign(chunk.size(), std::nullopt);
    size_t pending = chunk.size();
    // The kernel answers inside sendto(), so every reply is queued by now;
    // after the first blocking read, stop at the first empty read.
    bool dontwait = false;
    while (pending > 0) {
      auto sizes = receive(fd_.get(), recv_buf_, pending, dontwait);
      if (!sizes.ok()) {
        if (sizes.error().err == ENOBUFS) {  // replies dropped: retried below
          ++overruns_;
          dontwait = true;  // what was not dropped is queued: read it, do not wait
          continue;
        }
        break;  // EAGAIN/timeout: the rest is retried one by one below
      }
      dontwait = true;
      for (size_t i = 0; i < sizes->size(); ++i) {
        std::span<const uint8_t> d(recv_buf_.data() + i * kDatagramSize, (*sizes)[i]);
        // A malformed datagram leaves its request unanswered: retried below.
        (void)forEachNetlinkMessage(d, [&](std::span<const uint8_t> m) {
          auto r = parseTaskstatsMessage(m, family_);
          nlmsghdr h;
          std::memcpy(&h, m.data(), sizeof(h));
          uint32_t idx = h.nlmsg_seq - first;
          if (idx >= chunk.size() || got[idx]) return;  // stale or duplicate
          --pending;
          if (!r.ok()) {
            got[idx] = r.error();
          } else if (r->error != 0) {
            got[idx] = makeError(
                r->error, kPath,
                (kind == IdKind::kPid ? "pid " : "tgid ") + std::to_string(chunk[idx]));
          } else if (kind == IdKind::kPid && r->pid_stats) {
            got[idx] = std::move(*r->pid_stats);
          } else if (kind == IdKind::kTgid && r->tgid_stats) {
            got[idx] = std::move(*r->tgid_stats);
          } else {
            got[idx] = makeError(EPROTO, kPath, "reply without the requested aggregate");
          }
        });
      }
    }
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (got[i]) {
        fn(chunk[i], std::move(*got[i]));
      } else if (chunk.size() > 1) {
        // Lost to a full receive buffer: ask again, alone.
        Status s = queryMany(chunk.subspan(i, 1), kind, fn, 1);
        if (!s.ok()) return s;
      } else {
        fn(chunk[i], makeError(ETIMEDOUT, kPath, "no reply"));
      }
    }
  }
  return Ok{};
}

Result<TaskStats> TaskstatsClient::query(uint32_t id, IdKind kind) {
  std::optional<Result<TaskStats>> out;
  Status s = queryMany(std::span<const uint32_t>(&id, 1), kind,
                       [&](uint32_t, Result<TaskStats>&& r) { out = std::move(r); });
  if (!s.ok()) return s.error();
  return std::move(*out);
}

Result<std::vector<uint8_t>> TaskstatsClient::queryRaw(uint32_t id, IdKind kind) {
  const uint32_t seq = seq_++;
  if (auto s = sendBatch(std::span<const uint32_t>(&id, 1), kind, seq); !s.ok()) {
    return s.error();
  }
  for (;;) {
    auto sizes = receive(fd_.get(), recv_buf_, 1, false);
    if (!sizes.ok()) return sizes.error();
    if ((*sizes)[0] < sizeof(nlmsghdr)) continue;
    nlmsghdr h;
    std::memcpy(&h, recv_buf_.data(), sizeof(h));
    if (h.nlmsg_seq != seq) continue;
    return std::vector<uint8_t>(recv_buf_.begin(), recv_buf_.begin() + (*sizes)[0]);
  }
}

Result<std::string> possibleCpus() {
  constexpr const char* kFile = "/sys/devices/system/cpu/possible";
  auto text = readWholeFile(kFile);
  if (!text.ok()) return text.error();
  if (trimRight(*text).empty()) return makeError(EINVAL, kFile, "empty");
  return std::string(trimRight(*text));
}

Result<ExitListener> ExitListener::open(uint16_t family, std::string cpumask,
                                        int rcvbuf) {
  if (cpumask.empty()) {
    auto cpus = possibleCpus();
    if (!cpus.ok()) return cpus.error();
    cpumask = std::move(*cpus);
  }
  auto fd = openSocket(rcvbuf);
  if (!fd.ok()) return fd.error();
  std::vector<uint8_t> req;
  appendRequest(req, family, NLM_F_REQUEST | NLM_F_ACK, 1, TASKSTATS_CMD_GET,
                TASKSTATS_GENL_VERSION, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK,
                cpumask.c_str(), cpumask.size() + 1);
  if (auto s = sendAll(fd->get(), req); !s.ok()) return s.error();
  // Exit notifications may already be queued ahead of the ack: skip them.
  std::vector<uint8_t> buf;
  for (;;) {
    auto sizes = receive(fd->get(), buf, 1, false);
    if (!sizes.ok()) return sizes.error();
    if ((*sizes)[0] < NLMSG_HDRLEN) continue;
    nlmsghdr h;
    std::memcpy(&h, buf.data(), sizeof(h));
    if (h.nlmsg_type != NLMSG_ERROR || h.nlmsg_seq != 1) continue;
    int32_t e = 0;
    std::memcpy(&e, buf.data() + NLMSG_HDRLEN, sizeof(e));
    if (e != 0) {
      return makeError(-e, kPath, "TASKSTATS_CMD_ATTR_REGISTER_CPUMASK " + cpumask);
    }
    break;
  }
  return ExitListener(std::move(fd.value()), family, std::move(cpumask));
}

ExitListener::~ExitListener() {
  if (!fd_.valid()) return;
  // The kernel also drops a listener lazily when sending to it fails, but
  // deregistering spares it the work.
  std::vector<uint8_t> req;
  appendRequest(req, family_, NLM_F_REQUEST, 2, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION,
                TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, cpumask_.c_str(),
                cpumask_.size() + 1);
  (void)sendAll(fd_.get(), req);
}

Result<size_t> ExitListener::drainRaw(
    const std::function<void(std::span<const uint8_t>)>& fn) {
  size_t total = 0;
  for (;;) {
    auto sizes = receive(fd_.get(), buf_, 64, true);
    if (!sizes.ok()) {
      const int e = sizes.error().err;
      if (e == EAGAIN || e == EWOULDBLOCK) return total;
      if (e == ENOBUFS) {  // notifications were dropped; the queue is still readable
        ++overruns_;
        continue;
      }
      return sizes.error();
    }
    for (size_t i = 0; i < sizes->size(); ++i) {
      std::span<const uint8_t> d(buf_.data() + i * kDatagramSize, (*sizes)[i]);
      if (d.empty()) {
        ++malformed_;
        continue;
      }
      ++total;
      fn(d);
    }
  }
}

Result<size_t> ExitListener::drain(
    const std::function<void(const TaskstatsMessage&)>& fn) {
  size_t total = 0;
  auto n = drainRaw([&](std::span<const uint8_t> d) {
    Status s = forEachNetlinkMessage(d, [&](std::span<const uint8_t> m) {
      auto r = parseTaskstatsMessage(m, family_);
      if (!r.ok() || r->error != 0) {
        ++malformed_;
        return;
      }
      ++total;
      fn(*r);
    });
    if (!s.ok()) ++malformed_;
  });
  if (!n.ok()) return n.error();
  return total;
}

bool ExitListener::waitReadable(int timeout_ms, int wake_fd) const {
  pollfd p[2] = {{fd_.get(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  int n = ::poll(p, wake_fd >= 0 ? 2 : 1, timeout_ms);
  return n > 0 && (p[0].revents & (POLLIN | POLLERR));
}

}  // namespace memcg::taskstats

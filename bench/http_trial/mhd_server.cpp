// Trial server (b): libmicrohttpd (Debian libmicrohttpd-dev, 0.9.75): epoll
// in internal threads (a pool of --threads, each with its own epoll set and a
// share of the connections), per-connection timeout, connection limit, TLS
// through GnuTLS. See trial_common.h for the command line.
//
// What libmicrohttpd cannot be told, and how this server stands in for it:
// - The connection timeout is one value in whole seconds for the head, the
//   body, idle keep-alive and the TLS handshake: ceil(--read-timeout-ms).
// - The head limit is the per-connection memory pool, which also holds the
//   parsed headers and the read buffer: 2 x 16 KiB, so a 15 KiB head passes.
// - There is no body limit: the handler answers 413 from Content-Length, and
//   closes a chunked body once it passes 64 KiB.
// - There is no worker queue: a handler runs on the polling thread that owns
//   the connection (so /slow stalls that thread's share of connections), and
//   nothing answers 503 after a queue wait; an adopter would suspend the
//   connection (MHD_ALLOW_SUSPEND_RESUME) and run its own pool.
#include <microhttpd.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bench/http_trial/trial_common.h"

namespace {

struct Upload {
  size_t bytes = 0;
  bool tooLarge = false;
};

MHD_Result reply(MHD_Connection* c, unsigned status, const std::string& body,
                 const char* type = "text/plain") {
  MHD_Response* r =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                      MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", type);
  MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

MHD_Result handle(void*, MHD_Connection* c, const char* url, const char* method, const char*,
                  const char* data, size_t* dataSize, void** state) {
  if (*state == nullptr) {  // headers only: decide what can be decided before the body
    auto* u = new Upload;
    *state = u;
    const char* cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && std::strtoull(cl, nullptr, 10) > trial::kMaxBodyBytes) {
      u->tooLarge = true;
      return reply(c, 413, "body too large\n");
    }
    return MHD_YES;
  }
  auto* u = static_cast<Upload*>(*state);
  if (*dataSize != 0) {  // a body piece
    u->bytes += *dataSize;
    *dataSize = 0;
    if (u->bytes > trial::kMaxBodyBytes) return MHD_NO;  // chunked and too large: close
    return MHD_YES;
  }
  if (u->tooLarge) return MHD_YES;
  std::string_view m = method, p = url;
  if (m == "GET" && p == "/metrics") {
    const std::string& b = trial::metricsBody();
    MHD_Response* r = MHD_create_response_from_buffer(b.size(), const_cast<char*>(b.data()),
                                                      MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
  }
  if (m == "GET" && p == "/slow") {
    std::this_thread::sleep_for(std::chrono::milliseconds(trial::kSlowHandlerMs));
    return reply(c, 200, "slow\n");
  }
  if (m == "POST" && p == "/echo") return reply(c, 200, std::to_string(u->bytes) + "\n");
  return reply(c, 404, "not found\n");
}

void completed(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
  delete static_cast<Upload*>(*state);
  *state = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  trial::Options o = trial::parseArgs(argc, argv);
  unsigned flags = MHD_USE_EPOLL | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  std::string cert, key;
  if (!o.certFile.empty()) {
    flags |= MHD_USE_TLS;
    cert = trial::readFile(o.certFile);
    key = trial::readFile(o.keyFile);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  unsigned timeoutS = static_cast<unsigned>((o.readTimeoutMs + 999) / 1000);
  MHD_OptionItem tls[] = {
      {MHD_OPTION_HTTPS_MEM_CERT, 0, cert.empty() ? nullptr : cert.data()},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, key.empty() ? nullptr : key.data()},
      {MHD_OPTION_END, 0, nullptr}};
  MHD_Daemon* d = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &handle, nullptr,                         //
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),             //
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(o.threads),        //
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(o.maxConn),        //
      MHD_OPTION_CONNECTION_TIMEOUT, timeoutS,                              //
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(2 * trial::kMaxHeadBytes),
      MHD_OPTION_NOTIFY_COMPLETED, &completed, nullptr,                     //
      MHD_OPTION_ARRAY, cert.empty() ? &tls[2] : tls,                       //
      MHD_OPTION_END);
  if (!d) {
    std::fprintf(stderr, "MHD_start_daemon failed\n");
    return 1;
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  trial::announce(info ? info->port : 0);
  trial::waitForStdinClose();
  MHD_stop_daemon(d);
  return 0;
}

// Trial server (c): Boost.Beast on Asio (Debian libboost-dev, header-only):
// one io_context run by --threads threads, every read and write asynchronous
// under a beast::tcp_stream deadline, TLS through asio::ssl (OpenSSL). See
// trial_common.h for the command line.
//
// What Beast leaves to the application, written here as an adopter would:
// - the connection cap (a counter; over it, a plain connection gets a 503 and
//   is closed, as in ours);
// - one deadline per read: --read-timeout-ms for a new connection's first
//   request, --idle-timeout-ms for a keep-alive connection's next one (the
//   timer does not restart when its head starts arriving); on expiry the
//   stream closes the socket, so no 408 is written;
// - 431 / 413 / 400 from the parser's header_limit / body_limit errors;
// - no worker queue: handlers run on the io threads (a slow one holds one of
//   them; the others keep serving every connection), no 503 after a wait.
#include <atomic>
#include <utility>  // before Asio: 1.74's awaitable.hpp uses std::exchange under C++20 unincluded
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "bench/http_trial/trial_common.h"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

struct Shared {
  trial::Options opts;
  std::atomic<int> open{0};
  std::optional<ssl::context> tls;
};

beast::tcp_stream& lowest(beast::tcp_stream& s) { return s; }
beast::tcp_stream& lowest(beast::ssl_stream<beast::tcp_stream>& s) { return s.next_layer(); }

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  template <class... A>
  Session(Shared& sh, A&&... a) : sh_(sh), stream_(std::forward<A>(a)...) {}
  ~Session() { --sh_.open; }

  void start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      read(true);
    } else {
      lowest(stream_).expires_after(std::chrono::milliseconds(sh_.opts.readTimeoutMs));
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (!ec) self->read(true);
                              });
    }
  }

 private:
  void read(bool first) {
    parser_.emplace();
    parser_->header_limit(trial::kMaxHeadBytes);
    parser_->body_limit(trial::kMaxBodyBytes);
    lowest(stream_).expires_after(
        std::chrono::milliseconds(first ? sh_.opts.readTimeoutMs : sh_.opts.idleTimeoutMs));
    http::async_read(stream_, buf_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       self->onRead(ec);
                     });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::header_limit) return answer(431, "request head too large\n", false);
    if (ec == http::error::body_limit) return answer(413, "body too large\n", false);
    static const auto& parseErrors = beast::error_code(http::error::end_of_stream).category();
    if (ec && ec.category() == parseErrors && ec != http::error::end_of_stream &&
        ec != http::error::partial_message)
      return answer(400, "malformed request\n", false);
    if (ec) return;  // closed, timed out (the stream closed the socket) or a transport error
    const auto& req = parser_->get();
    bool ka = req.keep_alive();
    if (req.method() == http::verb::get && req.target() == "/metrics") {
      return answer(200, trial::metricsBody(), ka, "text/plain; version=0.0.4; charset=utf-8");
    }
    if (req.method() == http::verb::get && req.target() == "/slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(trial::kSlowHandlerMs));
      return answer(200, "slow\n", ka);
    }
    if (req.method() == http::verb::post && req.target() == "/echo") {
      return answer(200, std::to_string(req.body().size()) + "\n", ka);
    }
    answer(404, "not found\n", ka);
  }

  void answer(int status, const std::string& body, bool keepAlive,
              const char* type = "text/plain") {
    res_ = {};
    res_.result(static_cast<unsigned>(status));
    res_.version(11);
    res_.set(http::field::content_type, type);
    res_.body() = body;
    res_.keep_alive(keepAlive);
    res_.prepare_payload();
    lowest(stream_).expires_after(std::chrono::seconds(30));
    http::async_write(stream_, res_,
                      [self = this->shared_from_this(), keepAlive](beast::error_code ec, size_t) {
                        if (!ec && keepAlive) self->read(false);
                        else self->close();
                      });
  }

  void close() {
    beast::error_code ec;
    lowest(stream_).socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  Shared& sh_;
  Stream stream_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

void acceptLoop(Shared& sh, tcp::acceptor& acc, net::io_context& ioc) {
  acc.async_accept(net::make_strand(ioc), [&](beast::error_code ec, tcp::socket s) {
    if (!ec) {
      if (sh.open.load() >= sh.opts.maxConn) {
        if (!sh.tls) {
          static const char k503[] =
              "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 21\r\nConnection: close\r\n"
              "\r\ntoo many connections\n";
          beast::error_code ig;
          s.non_blocking(true, ig);
          s.write_some(net::buffer(k503, sizeof k503 - 1), ig);
        }
      } else {
        ++sh.open;
        s.set_option(tcp::no_delay(true));
        if (sh.tls) {
          std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(sh, std::move(s),
                                                                          *sh.tls)
              ->start();
        } else {
          std::make_shared<Session<beast::tcp_stream>>(sh, std::move(s))->start();
        }
      }
    }
    acceptLoop(sh, acc, ioc);
  });
}

}  // namespace

int main(int argc, char** argv) {
  Shared sh;
  sh.opts = trial::parseArgs(argc, argv);
  if (!sh.opts.certFile.empty()) {
    sh.tls.emplace(ssl::context::tls_server);
    sh.tls->set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                        ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    sh.tls->use_certificate_chain_file(sh.opts.certFile);
    sh.tls->use_private_key_file(sh.opts.keyFile, ssl::context::pem);
  }
  net::io_context ioc(sh.opts.threads);
  tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  acceptLoop(sh, acc, ioc);
  std::vector<std::thread> threads;
  for (int i = 0; i < sh.opts.threads; ++i) threads.emplace_back([&] { ioc.run(); });
  trial::announce(acc.local_endpoint().port());
  trial::waitForStdinClose();
  ioc.stop();
  for (auto& t : threads) t.join();
  return 0;
}

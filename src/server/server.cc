// Server lifecycle: bind, threads, graceful stop, signals.
#include "server/server.h"

#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "server/listen_address.h"
#include "server/session.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::server {

using internal::Core;
using internal::Listener;
using internal::Session;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class Server::Impl {
 public:
  Impl(const ServerOptions& options, RequestHandler& handler, ServerMetrics& metrics)
      : core(options, handler, metrics),
        acceptor(core.accept_context),
        signals(core.accept_context) {}

  Core core;
  tcp::acceptor acceptor;
  net::signal_set signals;
  std::string address;
  uint16_t port = 0;

  util::Mutex mu;
  std::condition_variable cv;
  bool stopped ABSL_GUARDED_BY(mu) = false;
  int signal ABSL_GUARDED_BY(mu) = 0;

  // The request threads and the accept thread, last: destroyed (joined)
  // before the contexts they run. They end when their io_context is stopped
  // (Server::Stop, after the grace period), not by their stop tokens.
  std::vector<std::jthread> threads;
};

namespace {

// A request thread's loop: io_context::run, except that after running a
// handler the thread polls for up to `poll` more before it blocks. The next
// request of a client that sends them one after another then finds the
// thread awake (on the 2-core reference machine, six alternating server
// starts: median GetMetricData of one series 0.19 ms against 0.29 ms, within
// a run-to-run spread about as wide; BENCHMARKS.md). Between polls the thread
// yields, so other threads (the store's commit leader, its sealer) keep the
// CPU they need.
void RunPolling(net::io_context& context, std::chrono::microseconds poll) {
  if (poll.count() <= 0) {
    context.run();
    return;
  }
  while (context.run_one() > 0) {
    auto until = std::chrono::steady_clock::now() + poll;
    while (!context.stopped() && std::chrono::steady_clock::now() < until) {
      if (context.poll() > 0) {
        until = std::chrono::steady_clock::now() + poll;
      } else {
        std::this_thread::yield();
      }
    }
  }
}

}  // namespace

uint64_t RaiseOpenFileLimit(uint64_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min<rlim_t>(wanted, limit.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      RequestHandler& handler,
                                                      ServerMetrics& metrics) {
  if (!IsLoopback(options.host) && !options.authenticated) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "refusing to listen on %s:%d without --auth: anyone who can reach that address could "
        "read and write this server's data. Pass --auth FILE (see docs/api.md, "
        "\"Authentication\") or listen on 127.0.0.1",
        options.host, options.port));
  }
  if (options.threads < 1 || options.threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("server threads must be 1-64 (got %d)", options.threads));
  }
  uint64_t files = RaiseOpenFileLimit(options.max_connections + 64);
  if (files < options.max_connections + 64) {
    util::LogOnce("server-fd-limit",
                  absl::StrFormat("the open-file limit is %d; fewer than the %d connections "
                                  "allowed can be served (raise it with ulimit -n)",
                                  files, options.max_connections));
  }
  auto impl = std::make_unique<Impl>(options, handler, metrics);
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot listen on \"%s\": not a numeric IP address", options.host));
  }
  tcp::endpoint endpoint(address, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot listen on %s:%d: %s; is another server using the port? Pick another with "
        "--listen HOST:PORT",
        options.host, options.port, ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->address = address.is_v6() ? absl::StrFormat("[%s]:%d", options.host, impl->port)
                                  : absl::StrFormat("%s:%d", options.host, impl->port);
  std::make_shared<Listener>(impl->core, impl->acceptor)->Accept();
  for (int i = 0; i < options.threads; ++i) {
    impl->threads.emplace_back([context = impl->core.contexts[i].get(), poll_us = options.poll_us] {
      RunPolling(*context, std::chrono::microseconds(poll_us));
    });
  }
  impl->threads.emplace_back([context = &impl->core.accept_context] { context->run(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

uint16_t Server::port() const { return impl_->port; }
std::string Server::address() const { return impl_->address; }

void Server::Stop() {
  {
    util::MutexLock lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->cv.notify_all();
  Core& core = impl_->core;
  core.stopping.store(true);
  net::post(core.accept_context, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
    impl_->signals.cancel(ec);
  });
  std::vector<std::shared_ptr<Session>> open;
  {
    util::MutexLock lock(core.mu);
    for (auto& [unused, weak] : core.sessions) {
      if (std::shared_ptr<Session> session = weak.lock()) open.push_back(std::move(session));
    }
  }
  // Posted outside the lock: a session may be destroyed (and unregister
  // itself) as soon as its handler has run.
  for (std::shared_ptr<Session>& session : open) {
    net::post(session->executor(), [session] { session->Stop(); });
  }
  open.clear();
  // Requests in flight finish; then their connections close.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(core.options.shutdown_grace_ms);
  while (core.metrics.connections_open() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& guard : core.keep_running) guard.reset();
  core.accept_context.stop();
  for (auto& context : core.contexts) context->stop();
  for (std::jthread& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

int Server::RunUntilSignal() {
  impl_->signals.add(SIGINT);
  impl_->signals.add(SIGTERM);
  impl_->signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    {
      util::MutexLock lock(impl_->mu);
      impl_->signal = signal;
    }
    impl_->cv.notify_all();
  });
  int signal = 0;
  {
    util::MutexLock lock(impl_->mu);
    lock.Wait(impl_->cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) { return impl_->signal != 0 || impl_->stopped; });
    signal = impl_->signal;
  }
  Stop();
  return signal;
}

}  // namespace trainwatch::server

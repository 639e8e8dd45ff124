// tw_test_server: the HTTP server with the AWS and native APIs over the
// in-memory FakeBackend, for tests that drive real AWS clients and for the
// load test. Not a product: data lives in memory and is gone on exit.
//
//   tw_test_server [--listen 127.0.0.1:0] [--auth FILE] [--threads N]
//                  [--header-timeout-ms N] [--idle-timeout-ms N] [--max-connections N]
//                  [--discard-samples]
//
// --discard-samples: metric writes are validated and counted but not kept, so
// a long load test measures the server, not the fake store's growth.
//
// Prints "listening on HOST:PORT" on stdout once ready; stops on SIGINT/SIGTERM.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/api.h"
#include "api/native/native_api.h"
#include "api/sigv4.h"
#include "api/testing/fake_backend.h"
#include "server/listen_address.h"
#include "server/router.h"
#include "server/server.h"

namespace {

// Accepts what a SampleSink would (finite values) and forgets it.
class DiscardingSink final : public trainwatch::model::SampleSink {
 public:
  absl::Status Put(const trainwatch::model::SampleBatch& batch) override {
    for (const auto& series : batch.series) {
      for (const auto& s : series.samples) {
        if (!std::isfinite(s.value)) return absl::InvalidArgumentError("value is not finite");
      }
    }
    samples_ += batch.SampleCount();
    return absl::OkStatus();
  }

 private:
  std::atomic<uint64_t> samples_{0};
};

}  // namespace

int main(int argc, char** argv) {
  using namespace trainwatch;
  std::string listen = "127.0.0.1:0";
  std::string auth_file;
  bool discard_samples = false;
  server::ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tw_test_server: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--listen") listen = value();
    else if (arg == "--auth") auth_file = value();
    else if (arg == "--threads") options.threads = std::atoi(value().c_str());
    else if (arg == "--header-timeout-ms") options.header_timeout_ms = std::atoll(value().c_str());
    else if (arg == "--idle-timeout-ms") options.idle_timeout_ms = std::atoll(value().c_str());
    else if (arg == "--max-connections") options.max_connections = std::atoll(value().c_str());
    else if (arg == "--discard-samples") discard_samples = true;
    else {
      std::fprintf(stderr, "tw_test_server: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  absl::StatusOr<server::ListenAddress> address = server::ParseListenAddress(listen);
  if (!address.ok()) {
    std::fprintf(stderr, "tw_test_server: %s\n", std::string(address.status().message()).c_str());
    return 2;
  }
  options.host = address->host;
  options.port = address->port;

  util::SystemClock& clock = util::SystemClock::Get();
  api::testing::FakeBackend fake(clock);
  DiscardingSink discard;
  api::Backends backends = fake.backends();
  if (discard_samples) backends.samples = &discard;
  api::ApiOptions api_options;
  api::sigv4::CredentialStore credentials;
  if (!auth_file.empty()) {
    absl::StatusOr<api::sigv4::CredentialStore> loaded = api::sigv4::LoadAuthFile(auth_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tw_test_server: %s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    credentials = *std::move(loaded);
    api_options.credentials = &credentials;
    options.authenticated = true;
  }
  api::Api aws(api_options, backends, clock);
  api::NativeApi native(api::NativeOptions{.version = "test"}, backends, clock);
  server::ServerMetrics metrics;
  server::Router router(&aws, &native, &metrics);
  absl::StatusOr<std::unique_ptr<server::Server>> srv = server::Server::Start(options, router, metrics);
  if (!srv.ok()) {
    std::fprintf(stderr, "tw_test_server: %s\n", std::string(srv.status().message()).c_str());
    return 1;
  }
  std::printf("listening on %s\n", (*srv)->address().c_str());
  std::fflush(stdout);
  (*srv)->RunUntilSignal();
  return 0;
}

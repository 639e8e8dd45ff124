// S3Store against a stand-in service on loopback (tests/s3 runs it against
// s3rver, the whole archive through it).
#include "agent/s3_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainwatch::agent {
namespace {

// Answers every request 200 with a body saying whether another request was
// being answered at the same time: each request waits up to `wait` for a
// second one to arrive.
class PairingService {
 public:
  explicit PairingService(std::chrono::milliseconds wait) : wait_(wait) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        listen(listener_, 8) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int connection = accept(listener_, nullptr, nullptr);
        if (connection < 0) return;  // shut down
        std::lock_guard lock(mu_);
        connections_.emplace_back([this, connection] { Serve(connection); });
      }
    });
  }
  ~PairingService() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard lock(mu_);
    for (std::thread& t : connections_) t.join();
  }
  int port() const { return port_; }

 private:
  void Serve(int connection) {
    std::string request;
    char buffer[4096];
    for (;;) {  // a connection kept open carries one request after another
      size_t end;
      while ((end = request.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = read(connection, buffer, sizeof(buffer));
        if (n <= 0) {
          close(connection);
          return;
        }
        request.append(buffer, static_cast<size_t>(n));
      }
      request.erase(0, end + 4);  // GETs: no body
      bool together;
      {
        std::unique_lock lock(mu_);
        ++arrived_;
        together = answered_.wait_for(lock, wait_, [this] { return arrived_ >= 2; });
        answered_.notify_all();
      }
      const std::string body = together ? "together" : "alone";
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body;
      if (write(connection, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size())) {
        close(connection);
        return;
      }
    }
  }

  const std::chrono::milliseconds wait_;
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable answered_;
  int arrived_ = 0;
  std::vector<std::thread> connections_;
};

// A dashboard reading an archived job must not wait for another reader's
// request (or an upload, or its retries): each request has a connection of
// its own.
TEST(S3StoreTest, RequestsFromTwoThreadsGoAtOnce) {
  setenv("AWS_ACCESS_KEY_ID", "test", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
  PairingService service(std::chrono::seconds(10));
  S3StoreOptions options;
  options.bucket = "runs";
  options.endpoint = "http://127.0.0.1:" + std::to_string(service.port());
  options.attempts = 1;
  auto store = S3Store::Create(options);
  ASSERT_TRUE(store.ok()) << store.status();
  std::string answers[2];
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&, i] {
      absl::StatusOr<std::optional<std::string>> got =
          (*store)->Get("jobs/j" + std::to_string(i) + "/job.json");
      answers[i] = got.ok() && got->has_value() ? **got : std::string(got.status().message());
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(answers[0], "together");
  EXPECT_EQ(answers[1], "together");
  EXPECT_EQ((*store)->counts().requests, 2);
}

}  // namespace
}  // namespace trainwatch::agent

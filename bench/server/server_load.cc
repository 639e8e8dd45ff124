// server_load: a bounded load test of the HTTP server on loopback.
//
// Starts tw_test_server (the server over the in-memory fake backend, metric
// writes discarded so the run measures the server, not a growing fake),
// opens N keep-alive connections that each send a request, wait for the
// answer, think, and repeat (PutMetricData over AWS JSON 1.0 and the query
// protocol, GetMetricStatistics, native health), plus M slowloris clients that
// dribble a request header a byte at a time and reconnect whenever the server
// cuts them off. Reports the normal clients' latency percentiles, errors, how
// often slowloris clients were cut off, and the server's RSS.
//
//   server_load --server build/release/src/server/tw_test_server
//               [--connections 1000] [--slowloris 50] [--duration-s 20]
//               [--think-ms 1000] [--server-threads 2] [--header-timeout-ms 2000]
//
// Exit status 1 when a request failed, a keep-alive connection was dropped or
// no slowloris client was ever cut off (functional failures); the speed and
// memory figures are reported, not asserted (BENCHMARKS.md).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string server;
  int connections = 1000;
  int slowloris = 50;
  double duration_s = 20;
  double warmup_s = 2;
  int think_ms = 1000;
  int server_threads = 2;
  int header_timeout_ms = 2000;
};

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string Request(const std::string& method, const std::string& target,
                    const std::string& headers, const std::string& body) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers;
  if (method == "POST") r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

std::vector<std::string> RequestMix() {
  std::string put_json =
      R"({"Namespace":"Load","MetricData":[{"MetricName":"loss","Value":0.5,"StorageResolution":1,)"
      R"("Dimensions":[{"Name":"TrainingJobName","Value":"load-job"}]},)"
      R"({"MetricName":"gpu","Values":[80,90,95],"Counts":[1,2,1],"Unit":"Percent"}]})";
  std::string put_query =
      "Action=PutMetricData&Version=2010-08-01&Namespace=Load&MetricData.member.1.MetricName=loss"
      "&MetricData.member.1.Value=0.5&MetricData.member.1.Dimensions.member.1.Name=TrainingJobName"
      "&MetricData.member.1.Dimensions.member.1.Value=load-job";
  int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::string stats = R"({"Namespace":"Load","MetricName":"seed","StartTime":)" +
                      std::to_string(now_s - 3600) + R"(,"EndTime":)" + std::to_string(now_s) +
                      R"(,"Period":60,"Statistics":["Average"]})";
  std::string json10 =
      "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: GraniteServiceVersion20100801.";
  std::vector<std::string> mix;
  for (int i = 0; i < 7; ++i) mix.push_back(Request("POST", "/", json10 + "PutMetricData\r\n", put_json));
  mix.push_back(Request("POST", "/", "Content-Type: application/x-www-form-urlencoded\r\n", put_query));
  mix.push_back(Request("POST", "/", json10 + "GetMetricStatistics\r\n", stats));
  mix.push_back(Request("GET", "/api/v1/health", "", ""));
  return mix;
}

struct Conn {
  int fd = -1;
  bool slow = false;
  std::string out;       // bytes left to send
  std::string in;        // bytes received
  int64_t sent_us = 0;   // when the request was sent
  int64_t next_us = 0;   // when to send the next one
  size_t next_request = 0;
  bool waiting = false;       // a request is outstanding
  bool slow_started = false;  // a slowloris client has sent its request line
  bool want_write = false;    // EPOLLOUT is registered
};

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

long RssKb(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/status";
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, nullptr, 10);
  }
  fclose(f);
  return kb;
}

// user + system CPU seconds the process has used.
double CpuSeconds(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return -1;
  unsigned long utime = 0, stime = 0;
  // Fields after ")": state(3) ... utime(14) stime(15).
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
    return -1;
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

double Percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::max(1.0, std::ceil(p / 100.0 * v.size())));
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
  return v[rank - 1] / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--server") o.server = next();
    else if (a == "--connections") o.connections = std::atoi(next().c_str());
    else if (a == "--slowloris") o.slowloris = std::atoi(next().c_str());
    else if (a == "--duration-s") o.duration_s = std::atof(next().c_str());
    else if (a == "--warmup-s") o.warmup_s = std::atof(next().c_str());
    else if (a == "--think-ms") o.think_ms = std::atoi(next().c_str());
    else if (a == "--server-threads") o.server_threads = std::atoi(next().c_str());
    else if (a == "--header-timeout-ms") o.header_timeout_ms = std::atoi(next().c_str());
    else {
      fprintf(stderr, "server_load: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.server.empty()) {
    fprintf(stderr, "usage: server_load --server PATH/tw_test_server [options]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);

  // Start the server and read its port.
  int pipefd[2];
  if (pipe(pipefd) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    std::string threads = std::to_string(o.server_threads);
    std::string header = std::to_string(o.header_timeout_ms);
    execl(o.server.c_str(), o.server.c_str(), "--listen", "127.0.0.1:0", "--threads",
          threads.c_str(), "--header-timeout-ms", header.c_str(), "--discard-samples",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipefd[1]);
  char line[256] = {0};
  FILE* server_out = fdopen(pipefd[0], "r");
  if (!fgets(line, sizeof(line), server_out) || strncmp(line, "listening on ", 13) != 0) {
    fprintf(stderr, "server_load: the server did not start\n");
    kill(pid, SIGKILL);
    return 1;
  }
  uint16_t port = static_cast<uint16_t>(atoi(strrchr(line, ':') + 1));

  std::vector<std::string> mix = RequestMix();
  int ep = epoll_create1(0);
  std::vector<Conn> conns(o.connections + o.slowloris);
  auto open_conn = [&](size_t i) {
    Conn& c = conns[i];
    c.fd = Connect(port);
    c.in.clear();
    c.out.clear();
    c.waiting = false;
    c.slow_started = false;
    c.want_write = false;
    c.next_us = NowUs() + (c.slow ? 0 : static_cast<int64_t>(i % 100) * o.think_ms * 10);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  };
  for (size_t i = 0; i < conns.size(); ++i) {
    conns[i].slow = static_cast<int>(i) >= o.connections;
    conns[i].next_request = i % mix.size();
    open_conn(i);
  }

  // Sends what it can; watches for writability only while bytes are left.
  auto flush = [&](size_t i) {
    Conn& c = conns[i];
    if (!c.out.empty()) {
      ssize_t sent = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (sent > 0) c.out.erase(0, static_cast<size_t>(sent));
    }
    bool want = !c.out.empty();
    if (want != c.want_write) {
      epoll_event ev{};
      ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
      ev.data.u64 = i;
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_write = want;
    }
  };

  std::vector<int64_t> latencies;
  latencies.reserve(1 << 20);
  uint64_t ok = 0, bad_status = 0, dropped = 0, slow_cut = 0;
  long rss_start = -1, rss_max = 0;
  double cpu_start = -1;
  int64_t start = NowUs();
  int64_t measure_from = start + static_cast<int64_t>(o.warmup_s * 1e6);
  int64_t end = measure_from + static_cast<int64_t>(o.duration_s * 1e6);
  int64_t next_rss = measure_from;
  int64_t last_scan = 0;
  std::vector<epoll_event> events(4096);
  char buf[65536];

  while (NowUs() < end) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 1);
    int64_t now = NowUs();
    if (now >= next_rss) {
      long kb = RssKb(pid);
      if (rss_start < 0) {
        rss_start = kb;
        cpu_start = CpuSeconds(pid);
      }
      rss_max = std::max(rss_max, kb);
      next_rss = now + 500000;
    }
    for (int k = 0; k < n; ++k) {
      size_t i = events[k].data.u64;
      Conn& c = conns[i];
      if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        ssize_t got;
        bool closed = false;
        while ((got = recv(c.fd, buf, sizeof(buf), 0)) > 0) c.in.append(buf, static_cast<size_t>(got));
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
        // Complete responses.
        while (!c.slow && c.waiting) {
          size_t head = c.in.find("\r\n\r\n");
          if (head == std::string::npos) break;
          size_t cl = c.in.find("Content-Length: ");
          size_t length = cl != std::string::npos && cl < head ? strtoul(c.in.c_str() + cl + 16, nullptr, 10) : 0;
          if (c.in.size() < head + 4 + length) break;
          int status = atoi(c.in.c_str() + 9);
          c.in.erase(0, head + 4 + length);
          c.waiting = false;
          c.next_us = now + o.think_ms * 1000;
          if (now >= measure_from) {
            latencies.push_back(now - c.sent_us);
            if (status == 200) ++ok; else ++bad_status;
          }
        }
        if (closed) {
          epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
          close(c.fd);
          if (c.slow) {
            ++slow_cut;
          } else if (now >= measure_from) {
            ++dropped;
          }
          open_conn(i);
          continue;
        }
      }
      if (events[k].events & EPOLLOUT) flush(i);
    }
    // Start due requests (checked once a millisecond); slowloris clients
    // send one more header byte.
    if (now - last_scan < 1000) continue;
    last_scan = now;
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      if (c.waiting || now < c.next_us || !c.out.empty()) continue;
      if (c.slow) {
        c.out = c.slow_started ? "a" : "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ";
        c.slow_started = true;
        c.next_us = now + 500000;
      } else {
        c.out = mix[c.next_request++ % mix.size()];
        c.sent_us = now;
        c.waiting = true;
      }
      flush(i);
    }
  }
  long rss_end = RssKb(pid);
  double cpu_used = CpuSeconds(pid) - cpu_start;
  double own_cpu = CpuSeconds(getpid());
  for (Conn& c : conns) close(c.fd);
  kill(pid, SIGTERM);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);

  double seconds = o.duration_s;
  printf("server_load: %d keep-alive connections (think %d ms) + %d slowloris, %.0f s measured\n",
         o.connections, o.think_ms, o.slowloris, seconds);
  printf("  requests: %llu ok, %llu non-200, %.0f req/s; keep-alive connections dropped: %llu\n",
         static_cast<unsigned long long>(ok), static_cast<unsigned long long>(bad_status),
         ok / seconds, static_cast<unsigned long long>(dropped));
  printf("  latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", Percentile(latencies, 50),
         Percentile(latencies, 90), Percentile(latencies, 99), Percentile(latencies, 100));
  printf("  server CPU: %.2f s for %llu requests = %.1f us a request (%.0f%% of one core)\n",
         cpu_used, static_cast<unsigned long long>(ok + bad_status),
         cpu_used * 1e6 / std::max<uint64_t>(1, ok + bad_status), cpu_used * 100 / seconds);
  printf("  load generator CPU (whole run, for reference): %.2f s\n", own_cpu);
  printf("  slowloris connections cut off by the server (whole run): %llu\n",
         static_cast<unsigned long long>(slow_cut));
  printf("  server RSS: %.1f MiB after warm-up, %.1f MiB max, %.1f MiB at the end\n",
         rss_start / 1024.0, rss_max / 1024.0, rss_end / 1024.0);
  bool failed = bad_status > 0 || dropped > 0 || ok == 0 || (o.slowloris > 0 && slow_cut == 0) ||
                !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0;
  if (failed) printf("server_load: FAILED (errors, dropped connections, or slowloris never cut off)\n");
  return failed ? 1 : 0;
}

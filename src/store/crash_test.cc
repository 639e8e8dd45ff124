// Durability: a writer process (store_crash_writer) is killed with SIGKILL at
// random moments, again and again (including while it opens the folder and
// replays its head); afterwards every write it acknowledged must be there,
// exactly, and nothing must be there twice or wrong.
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "store/crash_batch.h"
#include "store/db.h"
#include "store/test_util.h"

extern char** environ;

namespace trainwatch::store {
namespace {

using testing::kCrashT0;

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child Spawn(const std::string& data, int64_t first_batch) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const std::string bin = std::string(TW_BINARY_DIR) + "/src/store/store_crash_writer";
  std::string first = std::to_string(first_batch);
  char* argv[] = {const_cast<char*>(bin.c_str()), const_cast<char*>(data.c_str()),
                  first.data(), nullptr};
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, bin.c_str(), &actions, nullptr, argv, environ), 0) << bin;
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  c.out = fds[0];
  return c;
}

// Reads complete lines (acknowledged batch numbers) from the child.
class AckReader {
 public:
  explicit AckReader(int fd) : fd_(fd) {}
  // Reads what is available within `timeout_ms`; false at end of file.
  bool Read(int timeout_ms, std::set<int64_t>* acked) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return true;
    char buf[4096];
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending_.find('\n')) != std::string::npos) {
      acked->insert(std::stoll(pending_.substr(0, nl)));
      pending_.erase(0, nl + 1);
    }
    return true;
  }

 private:
  int fd_;
  std::string pending_;  // a partial line is not an acknowledgement
};

struct Found {
  std::map<int64_t, Row> plain, weighted, sets;
};

void Collect(Db& db, Found* found, std::set<std::string>* messages) {
  auto view = db.View();
  ASSERT_TRUE(view.ok()) << view.status();
  for (const char* metric : {"plain", "weighted", "sets"}) {
    model::SeriesKey key = testing::CrashKey(metric);
    std::vector<SeriesRef> refs;
    ASSERT_TRUE(view->FindSeries(key.ns, key.metric, key.dimensions, nullptr, &refs).ok());
    if (refs.empty()) continue;
    ASSERT_EQ(refs.size(), 1u);
    std::map<int64_t, Row>& rows = metric[0] == 'p' ? found->plain
                                   : metric[0] == 'w' ? found->weighted
                                                      : found->sets;
    ASSERT_TRUE(view->ScanRows(refs[0].id, INT64_MIN, INT64_MAX, [&](uint8_t, const Row& r) {
                      EXPECT_TRUE(rows.emplace(r.t_ms, r).second)
                          << metric << " has t=" << r.t_ms << " twice";
                    }).ok());
  }
  auto stream = view->GetLogStream("crash", "stream");
  ASSERT_TRUE(stream.ok());
  if (!stream->has_value()) return;
  auto cursor = view->NewLogCursor(**stream);
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
    EXPECT_TRUE(messages->insert(cursor->event()->message).second);
  }
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

TEST(Crash, AcknowledgedWritesSurviveKillNineAtRandomMoments) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE(::testing::Message() << "random seed " << seed);
  std::set<int64_t> acked;
  constexpr int kKills = 22;
  int kills_after_acks = 0;
  for (int k = 0; k < kKills; ++k) {
    Child child = Spawn(data, int64_t{k} * 1'000'000);
    ASSERT_GT(child.pid, 0);
    AckReader reader(child.out);
    const size_t before = acked.size();
    // A random moment. Every other kill: from right at the start (during open
    // and head replay) to well into the writing. The others: some time after the
    // first acknowledgement, so that kills in the middle of writing are there
    // however slowly a loaded machine opens the store.
    if (k % 2 == 1) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (acked.size() == before && std::chrono::steady_clock::now() < give_up &&
             reader.Read(10, &acked)) {
      }
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(rng() % (k % 2 == 1 ? 800 : 1600));
    while (std::chrono::steady_clock::now() < deadline && reader.Read(10, &acked)) {
    }
    ASSERT_EQ(::kill(child.pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
    // Acknowledgements already in the pipe count too.
    while (reader.Read(100, &acked)) {
    }
    ::close(child.out);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer exited by itself (status " << status << ") instead of being killed";
    if (acked.size() > before) ++kills_after_acks;
  }
  ASSERT_GT(acked.size(), 50u) << "too few acknowledged writes to test anything";
  ASSERT_GE(kills_after_acks, kKills / 3);

  for (int reopen = 0; reopen < 2; ++reopen) {  // and replaying twice changes nothing
    DbOptions o;
    o.data_dir = data;
    o.background_thread = false;
    o.retention = testing::CrashRetention();
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    Found found;
    std::set<std::string> messages;
    Collect(**db, &found, &messages);
    // Every acknowledged batch is there, bit for bit.
    for (int64_t b : acked) {
      const int64_t t = kCrashT0 + b * 10;
      for (int i = 0; i < 5; ++i) {
        auto it = found.plain.find(t + i);
        ASSERT_NE(it, found.plain.end()) << "batch " << b << " sample " << i << " is missing";
        EXPECT_TRUE(SameBits(it->second.c[0], testing::CrashValue(0, t + i)));
      }
      ASSERT_TRUE(found.weighted.count(t)) << "batch " << b;
      EXPECT_TRUE(SameBits(found.weighted[t].c[0], testing::CrashValue(1, t)));
      EXPECT_EQ(found.weighted[t].c[1], 3);
      ASSERT_TRUE(found.sets.count(t)) << "batch " << b;
      EXPECT_TRUE(SameBits(found.sets[t].c[2], testing::CrashValue(2, t)));
      EXPECT_TRUE(messages.count(absl::StrFormat("batch %d", b))) << "log of batch " << b;
    }
    // Whatever else is there (written, but killed before the acknowledgement)
    // is a whole, correct batch.
    for (const auto& [t, row] : found.plain) {
      EXPECT_TRUE(SameBits(row.c[0], testing::CrashValue(0, t))) << "t=" << t;
      const int64_t base = kCrashT0 + (t - kCrashT0) / 10 * 10;
      for (int i = 0; i < 5; ++i) EXPECT_TRUE(found.plain.count(base + i)) << "torn batch at " << t;
    }
    EXPECT_LE(acked.size(), found.weighted.size());
    auto view = (*db)->View();
    std::vector<SeriesRef> refs;
    model::SeriesKey key = testing::CrashKey("plain");
    ASSERT_TRUE(view->FindSeries(key.ns, key.metric, key.dimensions, nullptr, &refs).ok());
    auto last = view->GetLastValue(refs[0].id);
    ASSERT_TRUE(last.ok() && last->has_value());
    EXPECT_EQ((*last)->t_ms, found.plain.rbegin()->first);
  }
}

}  // namespace
}  // namespace trainwatch::store

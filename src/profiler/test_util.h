#pragma once
// Test helpers for the profiler's tests (not part of the library): an
// in-memory SampleSink, fixture trees copied into a temporary folder so that
// a test can rewrite files between ticks, and lookups into batches.

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/series.h"
#include "model/sinks.h"
#include "util/mutex.h"

namespace trainwatch::profiler::testing {

// MemorySampleSink: keeps every Put batch. Thread-safe.
class MemorySampleSink : public model::SampleSink {
 public:
  absl::Status Put(const model::SampleBatch& batch) override {
    util::MutexLock lock(mu_);
    if (fail_) return absl::UnavailableError("memory sink told to fail");
    batches_.push_back(batch);
    return absl::OkStatus();
  }
  void set_fail(bool fail) {
    util::MutexLock lock(mu_);
    fail_ = fail;
  }
  std::vector<model::SampleBatch> batches() const {
    util::MutexLock lock(mu_);
    return batches_;
  }
  // All samples of the series (ns, metric) whose dimensions are exactly `dims`, in Put order.
  std::vector<model::Sample> Series(std::string_view ns, std::string_view metric,
                                    const std::map<std::string, std::string>& dims) const {
    util::MutexLock lock(mu_);
    std::vector<model::Sample> out;
    for (const auto& b : batches_) {
      for (const auto& s : b.series) {
        if (Matches(s.key, ns, metric, dims))
          out.insert(out.end(), s.samples.begin(), s.samples.end());
      }
    }
    return out;
  }

  static bool Matches(const model::SeriesKey& key, std::string_view ns, std::string_view metric,
                      const std::map<std::string, std::string>& dims) {
    if (key.ns != ns || key.metric != metric || key.dimensions.size() != dims.size()) return false;
    for (const auto& d : key.dimensions) {
      auto it = dims.find(d.name);
      if (it == dims.end() || it->second != d.value) return false;
    }
    return true;
  }

 private:
  mutable util::Mutex mu_;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<model::SampleBatch> batches_ ABSL_GUARDED_BY(mu_);
};

// The single value of series (ns, metric, dims) in `batch`, if present.
inline std::optional<double> ValueIn(const model::SampleBatch& batch, std::string_view ns,
                                     std::string_view metric,
                                     const std::map<std::string, std::string>& dims) {
  for (const auto& s : batch.series) {
    if (MemorySampleSink::Matches(s.key, ns, metric, dims) && !s.samples.empty()) {
      return s.samples.back().value;
    }
  }
  return std::nullopt;
}

// A temporary folder, removed with its content on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tw-profiler-XXXXXX").string();
    char* p = ::mkdtemp(pattern.data());
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string TestdataDir() { return TW_PROFILER_TESTDATA; }

// Copies fixture tree testdata/<name> into dir/<name>; returns the copy's path.
inline std::string CopyFixture(const TempDir& dir, const std::string& name) {
  std::filesystem::path dst = std::filesystem::path(dir.path()) / name;
  std::filesystem::copy(std::filesystem::path(TestdataDir()) / name, dst,
                        std::filesystem::copy_options::recursive);
  return dst.string();
}

// Rewrites a file in place (same inode: descriptors the profiler keeps open
// see the new content, as with the kernel's files).
inline void Rewrite(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A /proc/<pid>/stat line with the fields the profiler reads.
inline std::string StatLine(int pid, const std::string& comm, int ppid, uint64_t utime,
                            uint64_t stime, uint64_t cutime, uint64_t cstime, int threads,
                            uint64_t start, int64_t rss_pages) {
  std::string s = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) + " " +
                  std::to_string(pid) + " " + std::to_string(pid) + " 0 -1 4194560 1000 0 0 0 " +
                  std::to_string(utime) + " " + std::to_string(stime) + " " +
                  std::to_string(cutime) + " " + std::to_string(cstime) + " 20 0 " +
                  std::to_string(threads) + " 0 " + std::to_string(start) + " 100000000 " +
                  std::to_string(rss_pages);
  for (int i = 0; i < 28; ++i) s += " 0";
  return s + "\n";
}

}  // namespace trainwatch::profiler::testing

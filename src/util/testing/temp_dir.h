#pragma once
// TempDir for tests of any layer (not linked into the product).

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace trainwatch::util::testing {

// A fresh folder under the test's temporary directory, removed on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? absl::StrFormat("%s.%s", info->test_suite_name(),
                                                         info->name())
                                       : std::string("test");
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = absl::StrFormat("%s/tw-%s-%d-%d", ::testing::TempDir(), name,
                            static_cast<int64_t>(::getpid()), counter.fetch_add(1));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace trainwatch::util::testing

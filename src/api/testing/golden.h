#pragma once
// Golden files for tests: EXPECT_GOLDEN compares `actual` with the file at
// tests/golden/<relative_path>; with TW_UPDATE_GOLDEN=1 in the environment it
// rewrites the file instead (review the diff before committing).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace trainwatch::api::testing {

inline std::filesystem::path GoldenPath(const std::string& relative_path) {
  return std::filesystem::path(TW_SOURCE_DIR) / "tests" / "golden" / relative_path;
}

inline void ExpectGolden(const std::string& relative_path, const std::string& actual) {
  std::filesystem::path path = GoldenPath(relative_path);
  const char* update = std::getenv("TW_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << path
                         << "; run the test with TW_UPDATE_GOLDEN=1 to create it";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden file " << path
                                    << " differs; if the change is intended, rerun with "
                                       "TW_UPDATE_GOLDEN=1 and review the diff";
}

}  // namespace trainwatch::api::testing

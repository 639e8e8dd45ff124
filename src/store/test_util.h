#pragma once
// Test helpers for the store's tests (not linked into the product).

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "store/db.h"
#include "util/clock.h"
#include "util/testing/temp_dir.h"

namespace trainwatch::store::testing {

using util::testing::TempDir;  // util/testing/temp_dir.h

// The folder's writer on `clock`, without a maintenance thread; null (and a
// test failure) when it cannot be opened.
inline std::unique_ptr<Db> OpenWriterOrDie(const std::string& dir, util::Clock* clock) {
  DbOptions options;
  options.data_dir = dir;
  options.clock = clock;
  options.background_thread = false;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(options);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

}  // namespace trainwatch::store::testing

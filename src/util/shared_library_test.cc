#include "util/shared_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace trainwatch::util {
namespace {

using ::testing::HasSubstr;

TEST(SharedLibraryTest, BindsWhatTheLibraryHasAndNamesWhatItLacks) {
  auto libc = SharedLibrary::Open("libc.so.6");
  ASSERT_TRUE(libc.ok()) << libc.status();
  size_t (*length)(const char*) = nullptr;
  ASSERT_TRUE((*libc)->Bind(&length, "strlen"));
  EXPECT_EQ(length("trainwatch"), 10u);

  int (*nothing)() = nullptr;
  EXPECT_FALSE((*libc)->Bind(&nothing, "trainwatch_no_such_function"));
  EXPECT_EQ(nothing, nullptr);
  std::string missing;
  (*libc)->Require(&length, "strlen", &missing);
  (*libc)->Require(&nothing, "trainwatch_no_such_function", &missing);
  (*libc)->Require(&nothing, "trainwatch_nor_this", &missing);
  EXPECT_EQ(missing, " trainwatch_no_such_function trainwatch_nor_this");
}

TEST(SharedLibraryTest, ALibraryThatIsNotThereSaysWhy) {
  auto absent = SharedLibrary::Open("libtrainwatch-absent.so.1");
  ASSERT_FALSE(absent.ok());
  EXPECT_TRUE(absl::IsUnavailable(absent.status()));
  EXPECT_THAT(absent.status().message(), HasSubstr("libtrainwatch-absent.so.1"));
}

}  // namespace
}  // namespace trainwatch::util

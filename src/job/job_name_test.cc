#include "job/job_name.h"

#include <gtest/gtest.h>

#include "model/job_record.h"

namespace trainwatch::job {
namespace {

constexpr int64_t kT = 1736942400250;  // 2025-01-15T12:00:00.250Z

TEST(GenerateJobName, UsesTheScriptAndTheTime) {
  EXPECT_EQ(GenerateJobName({"python3", "-u", "src/train_mnist.py", "--lr", "0.1"}, kT),
            "train-mnist-2025-01-15-12-00-00-250");
  EXPECT_EQ(GenerateJobName({"./run.sh"}, kT), "run-2025-01-15-12-00-00-250");
  EXPECT_EQ(GenerateJobName({"/usr/bin/torchrun", "--nproc=8"}, kT),
            "torchrun-2025-01-15-12-00-00-250");
  EXPECT_EQ(GenerateJobName({"___"}, kT), "job-2025-01-15-12-00-00-250");
}

TEST(GenerateJobName, AlwaysValid) {
  for (const auto& command : std::vector<std::vector<std::string>>{
           {std::string(200, 'a')}, {"-x-"}, {""}, {"python", "é.py"}, {}}) {
    std::string name = GenerateJobName(command, kT);
    EXPECT_TRUE(model::IsValidJobName(name)) << name;
  }
}

}  // namespace
}  // namespace trainwatch::job

// Golden tests for `trainwatch extract`: src/extract/testdata/NAME.log with
// the definitions NAME.json (a MetricDefinitions list, or an object with
// "MetricDefinitions" and optional "SageMakerEscaped": true) must produce
// exactly NAME.golden, the jsonl output. TW_UPDATE_GOLDEN=1 rewrites the
// golden files; review the diff.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/extract_output.h"
#include "cli/extract_stream.h"
#include "extract/definitions.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace trainwatch::cli {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path TestdataDir() { return fs::path(TW_SOURCE_DIR) / "src/extract/testdata"; }

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, JsonlOutput) {
  const fs::path base = TestdataDir() / GetParam();
  std::string defs_text = ReadFile(base.string() + ".json");
  auto defs = extract::ParseDefinitionsJson(defs_text);
  ASSERT_TRUE(defs.ok()) << defs.status();
  nlohmann::json doc = nlohmann::json::parse(defs_text);
  extract::ExtractOptions options;
  options.sagemaker_escaped = doc.is_object() && doc.value("SageMakerEscaped", false);

  // Small blocks and reads, several threads: the output must not depend on them.
  for (int threads : {1, 3}) {
    auto source = MemorySource(ReadFile(base.string() + ".log"), 997);
    StreamOptions stream_options;
    stream_options.threads = threads;
    stream_options.block_bytes = 1000;
    JsonlFormatter formatter(*defs);
    std::string got;
    auto result = ExtractStream(*source, *defs, options, stream_options, [&](ExtractedBlock& b) {
      formatter.Append(b.values, &got);
      return absl::OkStatus();
    });
    ASSERT_TRUE(result.ok()) << result.status();
    const std::string golden_path = base.string() + ".golden";
    const char* update = std::getenv("TW_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1" && threads == 1) {
      std::ofstream(golden_path, std::ios::binary) << got;
    }
    ASSERT_TRUE(fs::exists(golden_path)) << golden_path << " missing; run with TW_UPDATE_GOLDEN=1";
    EXPECT_EQ(got, ReadFile(golden_path)) << GetParam() << " with " << threads << " threads";
  }
}

std::vector<std::string> Cases() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(TestdataDir())) {
    if (entry.path().extension() == ".log") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Logs, GoldenTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trainwatch::cli

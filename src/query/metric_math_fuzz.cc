// Fuzz target: GetMetricData's metric math expressions, parsed and, when
// they parse, evaluated over three small series. Nothing crashes; a failure
// is an InvalidArgument or NotFound with a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "query/metric_math.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch::query;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<MetricMath> e = MetricMath::Parse(text);
  if (!e.ok()) {
    TW_CHECK(absl::IsInvalidArgument(e.status()) && !e.status().message().empty());
    return 0;
  }
  MathSeries a{"loss", {0, 60000, 180000}, {1, -2, 0}};
  MathSeries b{"acc", {60000, 120000}, {0.5, 1e300}};
  MathContext c;
  c.start_ms = 0;
  c.end_ms = 300000;
  c.period_ms = 60000;
  c.lookup = [&](std::string_view id) -> absl::StatusOr<MathValue> {
    MathValue v;
    if (id == "m1") v.series.push_back(a);
    else if (id == "m2") v.series.push_back(b);
    else return absl::NotFoundError(std::string(id));
    return v;
  };
  c.metrics = [&] { return std::vector<MathSeries>{a, b}; };
  absl::StatusOr<MathValue> v = e->Evaluate(c);
  if (!v.ok()) {
    TW_CHECK(absl::IsInvalidArgument(v.status()) || absl::IsNotFound(v.status()));
  }
  return 0;
}

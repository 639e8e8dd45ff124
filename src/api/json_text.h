#pragma once
// JSON text written straight into a string, for the large answers (a
// GetMetricData page holds up to 100,800 datapoints) where building an
// nlohmann::json tree first costs more than the query. The output is what
// nlohmann's dump writes for the same values, byte for byte in practice:
// doubles in shortest round-trip form with nlohmann's layout (1.0, 0.25,
// 1736942400.5, 1e+16, 1.5e-05), NaN and infinities as null, strings with
// its escapes (invalid UTF-8 becomes U+FFFD).

#include <string>
#include <string_view>

namespace trainwatch::api {

void AppendJsonDouble(std::string* out, double value);
void AppendJsonString(std::string* out, std::string_view value);

}  // namespace trainwatch::api

#pragma once
// Lanes: how the three kinds of PutMetricData input are kept apart inside a
// series. A lane is (kind, storage resolution):
//
//   kind       columns of a row                 from
//   kPlain     value                            Sample
//   kWeighted  value, count                     WeightedSample (Values/Counts)
//   kStatSet   count, sum, minimum, maximum     StatisticSet
//
// and resolution is high (1 s: served at every period) or standard (60:
// served only at periods >= 60 s, spec/aws-api.md §4.1). A series usually
// has one lane; each lane has its own chunks, so a chunk's values are one
// kind and compress well.

#include <cstdint>

namespace trainwatch::store {

enum class SampleKind : uint8_t { kPlain = 0, kWeighted = 1, kStatSet = 2 };

inline constexpr int kLaneCount = 6;

inline uint8_t MakeLane(SampleKind kind, bool standard_resolution) {
  return static_cast<uint8_t>(static_cast<int>(kind) * 2 + (standard_resolution ? 1 : 0));
}
inline SampleKind LaneKind(uint8_t lane) { return static_cast<SampleKind>(lane / 2); }
inline bool LaneIsStandardResolution(uint8_t lane) { return (lane & 1) != 0; }
inline int LaneColumns(uint8_t lane) {
  switch (LaneKind(lane)) {
    case SampleKind::kPlain:
      return 1;
    case SampleKind::kWeighted:
      return 2;
    case SampleKind::kStatSet:
      return 4;
  }
  return 1;
}
constexpr bool IsValidLane(uint8_t lane) { return lane < kLaneCount; }

// One row of a lane: a timestamp and up to four columns (see the table).
struct Row {
  int64_t t_ms = 0;
  double c[4] = {0, 0, 0, 0};
};

}  // namespace trainwatch::store

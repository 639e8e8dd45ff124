#pragma once
// A query::LogsReader that adds an archive's log events to the data folder's
// (docs/archive.md), as ArchiveBackedMetricsReader does for samples: once a
// job is archived complete and has ended, reading one of its streams
// (GetLogEvents, `trainwatch logs`, the report) gives first the events its
// log group's retention has dropped from the data folder since, from the
// archive, then the folder's own.
//
//   archive::ArchiveBackedLogsReader logs(&store_reader, &store_reader, &archived);
//   backends.logs = &logs;
//
// Retention deletes a stream's oldest events (log_store.h), so the archive's
// events older than the folder's first event are the ones it lacks; the
// events of an archived stream the folder still has come from the folder.
// The archive is asked only while the group has a retention (without one
// nothing is dropped), and only for a stream the folder still has (a deleted
// stream stays deleted). Listings (groups, streams and their first event
// times) and FilterLogEvents stay the data folder's.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "archive/archive_reader.h"
#include "query/reader.h"

namespace trainwatch::archive {

class ArchiveBackedLogsReader final : public query::LogsReader {
 public:
  // All must outlive this. `jobs` (the data folder's records): a job that
  // has not ended is not looked for in the archive.
  ArchiveBackedLogsReader(query::LogsReader* local, query::JobsReader* jobs, ArchiveReader* archive)
      : local_(local), jobs_(jobs), archive_(archive) {}

  absl::StatusOr<std::vector<query::LogGroupInfo>> ListLogGroups(const std::string& prefix) override {
    return local_->ListLogGroups(prefix);
  }
  absl::StatusOr<std::optional<int>> LogGroupRetention(const std::string& group) override {
    return local_->LogGroupRetention(group);
  }
  absl::StatusOr<std::vector<query::LogStreamInfo>> ListLogStreams(
      const std::string& group, const std::string& prefix) override {
    return local_->ListLogStreams(group, prefix);
  }
  absl::StatusOr<query::LogFilterPage> FilterLogEvents(const query::LogFilterQuery& query) override {
    return local_->FilterLogEvents(query);
  }
  absl::StatusOr<std::vector<query::StoredLogEvent>> ReadLogStream(
      const query::LogReadQuery& query) override;

 private:
  // The archived events of a stream of the training jobs' group whose job
  // the archive serves (ArchiveReader::ServesJob); null otherwise.
  std::shared_ptr<const std::vector<query::StoredLogEvent>> ArchivedStream(
      const model::LogStreamId& stream);

  query::LogsReader* const local_;
  query::JobsReader* const jobs_;
  ArchiveReader* const archive_;
};

}  // namespace trainwatch::archive

#pragma once
// How the CLI's read commands open the data folder and see jobs as they are:
// a job whose runner died (kill -9, reboot) is reported, and recorded, as
// Failed instead of staying InProgress forever.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "app/open_store.h"
#include "ingest/ingest.h"
#include "store/db.h"

namespace trainwatch::app {

// What these functions find and record (a runner gone, a stop request) is
// written to `db` when it is writable, through `ingest` when one is given (a
// server's: its observers, the rules and the reports among them, then see the
// job end). None undoes an update the runner made after the read: a stop
// request sets only that field of the record as stored, and a runner found
// gone is recorded only if the record is still as read.

// The job named `name` (case-insensitively), reconciled with its runner: when
// it is not terminal and its runner is gone, it is returned as Failed, and
// recorded so when `db` is writable. nullopt when there is no such job.
absl::StatusOr<std::optional<model::JobRecord>> LoadJob(store::Db& db, std::string_view name,
                                                        ingest::Ingest* ingest = nullptr);

// Reconciles one record (as LoadJob does), each host of a job on several;
// true when it changed.
bool ReconcileJob(store::Db& db, model::JobRecord* job, ingest::Ingest* ingest = nullptr);

// Records `host`, the record `as_read` of a host whose runner is gone or
// silent, as ReconcileRunner or RecordRunnerSilent made it (Failed), if the
// stored record is still as read (store::Db::UpdateJobIfUnchanged):
// FailedPrecondition when the runner updated it in between.
absl::Status RecordRunnerLost(store::Db& db, ingest::Ingest* ingest, const model::JobRecord& host,
                              const model::JobRecord& as_read);

// Stops every host of `job` that is InProgress: a runner on this machine by
// SIGTERM (job::RequestStop); a runner on another machine, which sends to the
// server that holds `db`, through its record (stop_requested_ms, which the
// runner's heartbeat brings it). OK when at least one host is being stopped.
// Otherwise: FailedPrecondition when the job is not InProgress ("The request was rejected
// because the training job is in status Stopped.") or its runner cannot be
// reached from here; NotFound when its runner is gone (recorded as Failed when
// `db` is writable); PermissionDenied when the runner belongs to another user.
absl::Status StopJobHosts(store::Db& db, const model::JobRecord& job,
                          ingest::Ingest* ingest = nullptr);

// "no training job named X in DIR; `trainwatch jobs --data DIR` lists them"
absl::Status JobNotFound(std::string_view name, const std::string& data_dir);

}  // namespace trainwatch::app

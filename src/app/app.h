#pragma once
// app/: the composition root, the one library that may use every layer
// (DESIGN.md). It composes what no single layer may: opening the data folder
// (data_dir.h finds it; job_access.h and api_backends.h open its store as the
// writer when nobody else holds it, else as a follower of whoever does), jobs
// seen as they are (a job whose runner died is reported, and recorded, as
// Failed; stops reach a runner here by signal and one elsewhere through its
// record: job_access.h), and the api's backends over the store for
// `trainwatch server` (api_backends.h: metrics and logs read through query/
// and written through ingest/, agents' batches taken exactly once, SageMaker
// jobs with CreateTrainingJob run by job::LocalJobs, runners that went silent
// recorded as Failed), and what serves them on one port (serve.h: the AWS and
// native APIs and the dashboard's live stream, for `trainwatch server` and
// `trainwatch run --ui` alike). The subcommands in cli/ put these together: the server
// with its listener (cli/server_command.cc), and `trainwatch run`, which
// writes to the data folder through ingest/ or, when a server takes the data,
// through agent/ (cli/run_command.cc). This header only describes; include the
// header you need.

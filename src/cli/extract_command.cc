// trainwatch extract: apply metric definitions to a log offline, the way a
// job applies them live, to test regexes before a run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "app/archiver.h"
#include "app/job_access.h"
#include "cli/commands.h"
#include "cli/extract_output.h"
#include "cli/extract_stream.h"
#include "extract/definitions.h"
#include "extract/text.h"
#include "model/log_event.h"
#include "query/store_reader.h"
#include "util/log.h"

namespace trainwatch::cli {
namespace {

struct ExtractFlags {
  std::string definitions_file;
  std::vector<std::string> metrics;
  std::string input = "-";
  std::string job;
  std::string format = "jsonl";
  bool sagemaker_escaped = false;
  int threads = 0;
};

// Exit statuses (cli/commands.h).
constexpr int kUsageError = 2;
constexpr int kFailed = 1;

// A stored job's log, read page by page, each event as one line ending in
// "\n": the lines split exactly as they did when the job printed them (a
// line the job ended with "\r" was stored as an event of its own). A job
// archived complete reads whole, whatever log retention has dropped since.
class JobLogSource final : public ByteSource {
 public:
  JobLogSource(std::unique_ptr<store::Db> db, std::string stream)
      : db_(std::move(db)),
        reader_(*db_),
        readers_(&reader_, &reader_, &reader_, db_->data_dir(),
                 app::FindRecordedArchive(db_->data_dir())) {
    request_.stream = {std::string(model::kTrainingJobsLogGroup), std::move(stream)};
    request_.forward = true;
    request_.limit = 10000;
  }

  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    while (pending_.size() == offset_ && !done_) {
      if (absl::Status s = FetchPage(); !s.ok()) return s;
    }
    size_t n = std::min(size, pending_.size() - offset_);
    std::memcpy(dst, pending_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  absl::Status FetchPage() {
    pending_.clear();
    offset_ = 0;
    absl::StatusOr<std::vector<query::StoredLogEvent>> page =
        readers_.logs().ReadLogStream(request_);
    if (absl::IsNotFound(page.status())) {  // the job printed nothing
      done_ = true;
      return absl::OkStatus();
    }
    if (!page.ok()) return page.status();
    for (const query::StoredLogEvent& event : *page) {
      pending_ += event.message;
      pending_ += '\n';
    }
    done_ = page->empty();
    if (!done_) {
      request_.from = page->back().position;
      request_.from->seq += 1;
    }
    return absl::OkStatus();
  }

  std::unique_ptr<store::Db> db_;
  query::StoreReader reader_;
  app::ReadersWithArchive readers_;
  query::LogReadQuery request_;
  std::string pending_;
  size_t offset_ = 0;
  bool done_ = false;
};

absl::StatusOr<std::unique_ptr<ByteSource>> OpenJobLog(const std::string& name,
                                                       const GlobalOptions& options) {
  const std::string data_dir = DataDir(options);
  absl::StatusOr<std::unique_ptr<store::Db>> db = app::OpenForRead(data_dir);
  if (!db.ok()) return db.status();
  absl::StatusOr<std::optional<model::JobRecord>> job = app::LoadJob(**db, name);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return app::JobNotFound(name, data_dir);
  if (!model::IsTerminal((*job)->status)) {
    util::LogInfo(absl::StrFormat(
        "job \"%s\" is still %s: extracting the lines it has printed so far", name,
        model::JobStatusName((*job)->status)));
  }
  return std::make_unique<JobLogSource>(*std::move(db), (*job)->log_stream);
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void PrintNotes(const std::vector<model::MetricDefinition>& defs, const StreamResult& result) {
  for (size_t i = 0; i < defs.size(); ++i) {
    std::string name = extract::QuoteForMessage(defs[i].name, 80);
    if (result.matched[i] == 0) {
      util::LogWarning(absl::StrFormat(
          "\"%s\" never matched in %d lines; check regex \"%s\" against a line of the log "
          "(matching is case-sensitive and searches each line; \\d \\s \\w are ASCII-only)",
          name, result.lines, extract::QuoteForMessage(defs[i].regex)));
    } else if (result.rejected[i] > 0) {
      util::LogWarning(absl::StrFormat(
          "\"%s\": %d of %d matches captured text that is not a number, e.g. \"%s\"; capture "
          "group 1 must hold just the number",
          name, result.rejected[i], result.matched[i],
          result.has_rejected_sample[i] ? extract::QuoteForMessage(result.rejected_sample[i], 60)
                                        : std::string()));
    }
  }
}

int RunExtract(const ExtractFlags& f, const GlobalOptions& global) {
  if (f.definitions_file.empty() && f.metrics.empty()) {
    util::LogError(
        "nothing to extract: give --definitions FILE and/or --metric NAME=REGEX (see "
        "trainwatch extract --help)");
    return kUsageError;
  }
  auto defs = MetricDefinitionsOf(f.definitions_file, f.metrics);
  if (!defs.ok()) {
    util::LogError(std::string(defs.status().message()));
    return kUsageError;
  }
  if (absl::Status valid = extract::ValidateDefinitions(*defs); !valid.ok()) {
    util::LogError(
        absl::StrFormat("invalid metric definitions, nothing extracted:\n%s", valid.message()));
    return kUsageError;
  }
  if (!f.job.empty() && f.input != "-") {
    util::LogError("give either --input LOG or --job NAME, not both");
    return kUsageError;
  }
  auto source = f.job.empty() ? OpenInput(f.input) : OpenJobLog(f.job, global);
  if (!source.ok()) {
    util::LogError(std::string(source.status().message()));
    return kUsageError;
  }
  if (f.job.empty() && f.input == "-" && ::isatty(STDIN_FILENO)) {
    util::LogInfo("reading the log from the terminal; end it with Ctrl-D (or give --input LOG)");
  }

  extract::ExtractOptions options;
  options.sagemaker_escaped = f.sagemaker_escaped;
  StreamOptions stream_options;
  stream_options.threads = f.threads;
  const bool jsonl = f.format == "jsonl";
  JsonlFormatter formatter(*defs);
  if (jsonl) {
    stream_options.format = [&formatter](ExtractedBlock* block) {
      formatter.Append(block->values, &block->text);
    };
  }
  SummaryTable table(defs->size());
  auto on_block = [&](ExtractedBlock& block) -> absl::Status {
    if (jsonl) {
      // Straight to the file descriptor: a block's text is already one big write.
      if (!WriteAll(STDOUT_FILENO, block.text)) {
        return absl::UnavailableError(
            absl::StrFormat("cannot write the output: %s", std::strerror(errno)));
      }
    } else {
      table.Add(block.values);
    }
    return absl::OkStatus();
  };
  auto result = ExtractStream(**source, *defs, options, stream_options, on_block);
  if (!result.ok()) {
    util::LogError(std::string(result.status().message()));
    return absl::IsUnavailable(result.status()) ? kFailed : kUsageError;
  }
  if (!jsonl) {
    uint64_t points = 0;
    for (const MetricSummary& row : table.rows()) points += row.datapoints;
    std::string text = table.Render(*defs, result->rejected);
    text += absl::StrFormat("\n%d lines, %d bytes, %d datapoints\n", result->lines, result->bytes,
                            points);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    PrintNotes(*defs, *result);
  }
  return 0;
}

}  // namespace

void RegisterExtractCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  auto flags = std::make_shared<ExtractFlags>();
  CLI::App* cmd = root.add_subcommand(
      "extract",
      "apply metric definitions to a log offline: the datapoints a job would record, to test "
      "regexes before a run");
  cmd->add_option("--definitions", flags->definitions_file,
                  "SageMaker MetricDefinitions JSON: [{\"Name\": ..., \"Regex\": ...}, ...]")
      ->type_name("FILE");
  cmd->add_option("--metric", flags->metrics,
                  "one more definition, NAME=REGEX (split at the first '='); repeatable, after "
                  "those of --definitions")
      ->type_name("NAME=REGEX")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--input", flags->input, "the log to read; - or none: stdin")->type_name("LOG");
  cmd->add_option("--job", flags->job,
                  "read a stored job's log instead (from --data): re-run new definitions "
                  "over a finished job")
      ->type_name("NAME");
  AddDataOption(cmd, options);
  cmd->add_option("--format", flags->format,
                  "jsonl: one {\"metric\": NAME, \"value\": V} per datapoint, in log order; "
                  "table: per metric datapoints, rejected matches, last, min, max")
      ->check(CLI::IsMember({"jsonl", "table"}));
  cmd->add_flag("--sagemaker-escaped", flags->sagemaker_escaped,
                "match against the text as CloudWatch shows it (TAB as #011, ESC as #033 ...), "
                "for definitions written against SageMaker's logs");
  cmd->add_option("--threads", flags->threads,
                  "matching threads (default: one per core, at most 4); output order never "
                  "depends on it")
      ->type_name("N")
      ->check(CLI::Range(0, 64));
  cmd->footer(
      "Rules: each line (ended by \\n, \\r or \\r\\n) is searched with each definition; the first\n"
      "match counts; capture group 1, white space stripped, must be a plain decimal number.\n"
      "Invalid definitions exit 2 before anything is printed. See docs/extraction.md.\n"
      "\n"
      "Examples:\n"
      "  trainwatch extract --definitions defs.json --input train.log\n"
      "  trainwatch extract --metric 'train:loss=loss: ([0-9.eE+-]+)' --input train.log "
      "--format table\n"
      "  python3 train.py 2>&1 | trainwatch extract --definitions defs.json\n"
      "  trainwatch extract --job mnist-7 --metric 'grad:norm=grad_norm=([0-9.eE+-]+)' "
      "--format table\n"
      "  trainwatch extract --sagemaker-escaped --metric 'train:error=#011train-error:(\\S+)' "
      "--input xgb.log");
  cmd->callback([flags, options, exit_code] { *exit_code = RunExtract(*flags, *options); });
}

}  // namespace trainwatch::cli

#include "archive/late_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_format.h"
#include "archive/local_folder_store.h"
#include "model/log_event.h"
#include "nlohmann/json.hpp"
#include "util/log.h"
#include "util/status_macros.h"

namespace trainwatch::archive {
namespace {

constexpr char kJournalFile[] = "journal.jsonl";

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, std::strerror(errno)));
}

// A stable name of an archive's address, whatever bytes it holds (FNV-1a).
std::string TargetId(std::string_view target) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : target) h = (h ^ c) * 1099511628211ull;
  return absl::StrFormat("%016x", h);
}

// The job of a log stream of the training jobs' group: "<job>/...".
std::optional<std::string> JobOfStream(const model::LogStreamId& stream) {
  if (stream.group != model::kTrainingJobsLogGroup) return std::nullopt;
  const size_t slash = stream.stream.find('/');
  if (slash == std::string::npos || slash == 0) return std::nullopt;
  return stream.stream.substr(0, slash);
}

void AppendData(const LateData& from, LateData* to) {
  for (const auto& [key, rows] : from.series) {
    std::vector<query::StoredRow>& mine = to->series[key];
    mine.insert(mine.end(), rows.begin(), rows.end());
  }
  for (const auto& [stream, events] : from.streams) {
    std::vector<LateEvent>& mine = to->streams[stream];
    mine.insert(mine.end(), events.begin(), events.end());
  }
}

bool ParseEntry(const nlohmann::json& j, std::string* job, std::string* drain, LateData* data) {
  if (!j.is_object() || !j.contains("job") || !j["job"].is_string()) return false;
  *job = j["job"].get<std::string>();
  *drain = j.value("drain", "");
  for (const nlohmann::json& s : j.value("series", nlohmann::json::array())) {
    if (!s.is_object() || !s.contains("rows") || !s["rows"].is_array()) return false;
    model::SeriesKey key;
    key.ns = s.value("ns", "");
    key.metric = s.value("metric", "");
    key.unit = s.value("unit", "None");
    const nlohmann::json dims = s.value("dims", nlohmann::json::object());
    for (const auto& [name, value] : dims.items()) {
      if (!value.is_string()) return false;
      key.dimensions.push_back({name, value.get<std::string>()});
    }
    std::vector<query::StoredRow>& rows = data->series[key];
    for (const nlohmann::json& r : s["rows"]) {
      if (!r.is_array() || r.size() != 8) return false;
      query::StoredRow row;
      const int kind = r[1].get<int>();
      if (kind < 0 || kind > static_cast<int>(query::StoredRow::Kind::kStatisticSet)) return false;
      row.t_ms = r[0].get<int64_t>();
      row.kind = static_cast<query::StoredRow::Kind>(kind);
      row.high_resolution = r[2].get<int>() != 0;
      row.value = r[3].get<double>();
      row.count = r[4].get<double>();
      row.sum = r[5].get<double>();
      row.minimum = r[6].get<double>();
      row.maximum = r[7].get<double>();
      rows.push_back(row);
    }
  }
  for (const nlohmann::json& s : j.value("streams", nlohmann::json::array())) {
    if (!s.is_object() || !s.contains("stream") || !s.contains("events")) return false;
    std::vector<LateEvent>& events = data->streams[s["stream"].get<std::string>()];
    for (const nlohmann::json& e : s["events"]) {
      if (!e.is_array() || e.size() != 3) return false;
      events.push_back({e[0].get<int64_t>(), e[1].get<int64_t>(), e[2].get<std::string>()});
    }
  }
  return true;
}

}  // namespace

std::string LateJournal::EncodeLine(const Entry& entry) {
  nlohmann::ordered_json j = {{"job", entry.job}};
  if (!entry.drain.empty()) j["drain"] = entry.drain;
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const auto& [key, rows] : entry.data.series) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const model::Dimension& d : key.dimensions) dims[d.name] = d.value;
    nlohmann::ordered_json encoded = nlohmann::ordered_json::array();
    for (const query::StoredRow& r : rows) {
      encoded.push_back({r.t_ms, static_cast<int>(r.kind), r.high_resolution ? 1 : 0, r.value,
                         r.count, r.sum, r.minimum, r.maximum});
    }
    series.push_back({{"ns", key.ns},
                      {"metric", key.metric},
                      {"unit", key.unit},
                      {"dims", dims},
                      {"rows", encoded}});
  }
  if (!series.empty()) j["series"] = series;
  nlohmann::ordered_json streams = nlohmann::ordered_json::array();
  for (const auto& [stream, events] : entry.data.streams) {
    nlohmann::ordered_json encoded = nlohmann::ordered_json::array();
    for (const LateEvent& e : events) encoded.push_back({e.t_ms, e.ingestion_ms, e.message});
    streams.push_back({{"stream", stream}, {"events", encoded}});
  }
  if (!streams.empty()) j["streams"] = streams;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

absl::StatusOr<std::unique_ptr<LateJournal>> LateJournal::Open(const std::string& dir,
                                                               LateJournalOptions options) {
  // The folder, created (and synced) as the archive's folders are.
  TW_ASSIGN_OR_RETURN(std::unique_ptr<LocalFolderStore> folder, LocalFolderStore::Open(dir));
  const std::string path = dir + "/" + kJournalFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot open " + path);
  std::unique_ptr<LateJournal> journal(new LateJournal(dir, options, fd));
  util::MutexLock lock(journal->mu_);
  TW_RETURN_IF_ERROR(journal->Load());
  return journal;
}

LateJournal::LateJournal(std::string dir, LateJournalOptions options, int fd)
    : dir_(std::move(dir)), options_(options), fd_(fd) {}

LateJournal::~LateJournal() {
  util::MutexLock lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status LateJournal::Load() {
  const std::string path = dir_ + "/" + kJournalFile;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  size_t pos = 0, line_no = 0, good_end = 0;
  std::string target, target_shown;  // the archive it was kept for
  while (pos < all.size()) {
    const size_t end = all.find('\n', pos);
    ++line_no;
    if (end == std::string::npos) break;  // cut short by a crash: dropped below
    nlohmann::json j = nlohmann::json::parse(all.substr(pos, end - pos), nullptr, false);
    Entry entry;
    bool ok = false;
    try {
      if (j.is_object() && j.contains("target_id")) {
        target = j["target_id"].get<std::string>();
        target_shown = j.value("target", "");
        pos = good_end = end + 1;
        continue;
      }
      if (j.is_object() && j.contains("read_to") && j.contains("job")) {
        // Where a pass read a job to (EndJob): the next plan starts there.
        read_to_[j["job"].get<std::string>()] = j["read_to"].get<int64_t>();
        pos = good_end = end + 1;
        continue;
      }
      ok = ParseEntry(j, &entry.job, &entry.drain, &entry.data);
    } catch (const nlohmann::json::exception&) {
      ok = false;
    }
    if (!ok) {
      return absl::DataLossError(absl::StrFormat(
          "%s, line %d: not a line of trainwatch's late-data journal; move the file away to "
          "start a new one (the data it holds is then not archived)",
          path, line_no));
    }
    if (entry.drain.empty()) {
      AppendData(entry.data, &pending_[entry.job]);
    } else {
      LateDrain& drain = drains_[entry.drain];
      drain.job = entry.job;
      drain.id = entry.drain;
      AppendData(entry.data, &drain.data);
    }
    pos = good_end = end + 1;
  }
  if (good_end < all.size()) {
    util::LogWarning(absl::StrFormat("%s: dropping a line cut short at its end (%d bytes)", path,
                                     all.size() - good_end));
    if (::ftruncate(fd_, static_cast<off_t>(good_end)) != 0) {
      return ErrnoError("cannot truncate " + path);
    }
  }
  bytes_ = static_cast<int64_t>(good_end);
  if (target != TargetId(options_.target)) {
    // What it holds, and where passes got to, are another archive's.
    if (!target.empty() || !pending_.empty() || !drains_.empty()) {
      int64_t kept = 0;
      for (const auto& [job, data] : pending_) kept += data.rows() + data.events();
      for (const auto& [id, drain] : drains_) kept += drain.data.rows() + drain.data.events();
      util::LogWarning(absl::StrFormat(
          "%s was kept for the archive %s; the archive is now %s: its late data (%d rows and "
          "events) stays out of the new one, which takes every job's data from the start",
          path, target_shown.empty() ? "(not named)" : target_shown, options_.target, kept));
    }
    pending_.clear();
    drains_.clear();
    read_to_.clear();
    return Rewrite();
  }
  return absl::OkStatus();
}

bool LateJournal::Append(const Entry& entry) { return AppendLine(EncodeLine(entry)); }

bool LateJournal::AppendLine(const std::string& line) {
  if (fd_ < 0) return false;  // a rewrite could not open the new file
  if (bytes_ + static_cast<int64_t>(line.size()) > options_.max_bytes) return false;
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      util::LogOnce("late-journal-write",
                    absl::StrFormat("%s/%s: cannot write: %s; late data is not archived", dir_,
                                    kJournalFile, std::strerror(errno)));
      // Cut what went in, so the file stays whole lines.
      if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
        util::LogOnce("late-journal-truncate", "cannot truncate the late-data journal");
      }
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    util::LogOnce("late-journal-sync",
                  absl::StrFormat("%s/%s: cannot sync: %s; late data is not archived", dir_,
                                  kJournalFile, std::strerror(errno)));
    if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
      util::LogOnce("late-journal-truncate", "cannot truncate the late-data journal");
    }
    return false;
  }
  bytes_ += static_cast<int64_t>(line.size());
  return true;
}

std::string LateJournal::ReadToLine(const std::string& job, int64_t read_to_ms) {
  return nlohmann::ordered_json{{"job", job}, {"read_to", read_to_ms}}.dump(
             -1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

absl::Status LateJournal::Rewrite() {
  std::string text = nlohmann::ordered_json{{"target_id", TargetId(options_.target)},
                                            {"target", options_.target}}
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                     "\n";
  for (const auto& [job, data] : pending_) {
    if (!data.empty()) text += EncodeLine({job, "", data});
  }
  for (const auto& [id, drain] : drains_) text += EncodeLine({drain.job, id, drain.data});
  for (const auto& [job, read_to] : read_to_) text += ReadToLine(job, read_to);
  absl::Status put = [&]() -> absl::Status {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<LocalFolderStore> folder, LocalFolderStore::Open(dir_));
    return folder->Put(kJournalFile, text);
  }();
  // Whether or not the new file took the old one's place, appends go to the
  // file of that name from now on.
  const std::string path = dir_ + "/" + kJournalFile;
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    util::LogOnce("late-journal-open",
                  absl::StrFormat("cannot open %s: %s; late data is not archived", path,
                                  std::strerror(errno)));
    bytes_ = 0;
    return put.ok() ? ErrnoError("cannot open " + path) : put;
  }
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  bytes_ = size < 0 ? 0 : static_cast<int64_t>(size);
  return put;
}

int64_t LateJournal::FrontierOf(const std::string& job) const {
  if (!started_) return kEndOfTime;
  auto it = frontier_.find(job);
  return it == frontier_.end() ? std::numeric_limits<int64_t>::min() : it->second;
}

void LateJournal::Journal(Entry entry) {
  if (!Append(entry)) {
    dropped_ += entry.data.rows() + entry.data.events();
    util::LogOnce("late-journal-full",
                  absl::StrFormat("%s/%s holds %d bytes, its most: late data for the archive "
                                  "is dropped until a pass writes what it holds",
                                  dir_, kJournalFile, bytes_));
    return;
  }
  AppendData(entry.data, &pending_[entry.job]);
}

void LateJournal::OnSamples(const model::SampleBatch& batch) {
  // Most series of a busy server's writes are of no job (a node exporter's):
  // they cost no lock.
  std::vector<std::pair<const model::SeriesSamples*, std::string>> of_jobs;
  for (const model::SeriesSamples& series : batch.series) {
    for (std::string& job : JobsOfSeries(series.key)) of_jobs.emplace_back(&series, std::move(job));
  }
  if (of_jobs.empty()) return;
  util::MutexLock lock(mu_);
  std::map<std::string, Entry> by_job;
  for (const auto& [series_ptr, job_name] : of_jobs) {
    const model::SeriesSamples& series = *series_ptr;
    const std::string* job = &job_name;
    const int64_t frontier = FrontierOf(*job);
    std::vector<query::StoredRow> rows;
    query::StoredRow row;
    row.high_resolution = series.storage_resolution_s == 1;
    for (const model::Sample& s : series.samples) {
      if (s.t_ms >= frontier) continue;
      row.kind = query::StoredRow::Kind::kPlain;
      row.t_ms = s.t_ms;
      row.value = s.value;
      rows.push_back(row);
    }
    for (const model::WeightedSample& s : series.weighted) {
      if (s.t_ms >= frontier) continue;
      query::StoredRow r = row;
      r.kind = query::StoredRow::Kind::kWeighted;
      r.t_ms = s.t_ms;
      r.value = s.value;
      r.count = s.count;
      rows.push_back(r);
    }
    for (const model::StatisticSet& s : series.statistic_sets) {
      if (s.t_ms >= frontier) continue;
      query::StoredRow r = row;
      r.kind = query::StoredRow::Kind::kStatisticSet;
      r.t_ms = s.t_ms;
      r.count = s.sample_count;
      r.sum = s.sum;
      r.minimum = s.minimum;
      r.maximum = s.maximum;
      rows.push_back(r);
    }
    if (rows.empty()) continue;
    Entry& entry = by_job[*job];
    entry.job = *job;
    std::vector<query::StoredRow>& mine = entry.data.series[series.key];
    mine.insert(mine.end(), rows.begin(), rows.end());
  }
  for (auto& [job, entry] : by_job) Journal(std::move(entry));
}

void LateJournal::OnLogs(const model::LogBatch& batch) {
  std::optional<std::string> job = JobOfStream(batch.stream);
  if (!job) return;
  util::MutexLock lock(mu_);
  const int64_t frontier = FrontierOf(*job);
  const int64_t now_ms = options_.clock->NowMs();
  Entry entry{*job, "", {}};
  for (const model::LogEvent& e : batch.events) {
    if (e.t_ms < frontier) {
      entry.data.streams[batch.stream.stream].push_back({e.t_ms, now_ms, e.message});
    }
  }
  if (!entry.data.empty()) Journal(std::move(entry));
}

bool LateJournal::DropFrom(const std::string& job, int64_t from_ms) {
  auto it = pending_.find(job);
  if (it == pending_.end()) return false;
  bool dropped = false;
  LateData& data = it->second;
  for (auto s = data.series.begin(); s != data.series.end();) {
    const size_t before = s->second.size();
    std::erase_if(s->second, [&](const query::StoredRow& r) { return r.t_ms >= from_ms; });
    dropped |= s->second.size() != before;
    s = s->second.empty() ? data.series.erase(s) : std::next(s);
  }
  for (auto s = data.streams.begin(); s != data.streams.end();) {
    const size_t before = s->second.size();
    std::erase_if(s->second, [&](const LateEvent& e) { return e.t_ms >= from_ms; });
    dropped |= s->second.size() != before;
    s = s->second.empty() ? data.streams.erase(s) : std::next(s);
  }
  if (data.empty()) pending_.erase(it);
  return dropped;
}

void LateJournal::BeginPass(const std::vector<PlannedJob>& planned,
                            const std::vector<std::string>& unplanned) {
  util::MutexLock lock(mu_);
  std::map<std::string, int64_t> frontier;
  bool dropped = false;
  for (const PlannedJob& job : planned) {
    frontier[job.job] = job.cut_ms;
    // The pinned read has these (they came before this point).
    dropped |= DropFrom(job.job, job.from_ms);
  }
  // Where this process's last pass got to, else (a server that just
  // started) everything: what is on disk may be several passes old.
  for (const std::string& job : unplanned) {
    auto known = frontier_.find(job);
    frontier[job] = started_ && known != frontier_.end() ? known->second : kEndOfTime;
  }
  // Data of no job this pass knows (journaled before the first pass: a job
  // created since the jobs were listed, a series named after no job): the
  // store has it, and a job's first pass reads it from there.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (frontier.contains(it->first)) {
      ++it;
    } else {
      it = pending_.erase(it);
      dropped = true;
    }
  }
  // Where passes read jobs to, for the jobs there are.
  std::erase_if(read_to_, [&](const auto& entry) { return !frontier.contains(entry.first); });
  frontier_ = std::move(frontier);
  started_ = true;
  ended_.clear();
  unsaved_drops_ |= dropped;
}

absl::Status LateJournal::SaveDrops() {
  util::MutexLock lock(mu_);
  if (!unsaved_drops_) return absl::OkStatus();
  TW_RETURN_IF_ERROR(Rewrite());
  unsaved_drops_ = false;
  return absl::OkStatus();
}

absl::Status LateJournal::EndJob(const std::string& job, int64_t archived_to_ms,
                                bool pass_ok) {
  util::MutexLock lock(mu_);
  frontier_[job] = archived_to_ms;
  if (pass_ok) ended_.insert(job);
  // Kept on disk with the next rewrite: a window without data gets no
  // segment, and a late segment (whose drain rewrites the journal first) must
  // not be read again from the store by a plan after a restart.
  read_to_[job] = archived_to_ms;
  if (DropFrom(job, archived_to_ms)) return Rewrite();
  return absl::OkStatus();
}

int64_t LateJournal::ReadTo(const std::string& job) const {
  util::MutexLock lock(mu_);
  auto it = read_to_.find(job);
  return it == read_to_.end() || it->second == kEndOfTime ? 0 : it->second;
}

absl::StatusOr<std::vector<LateDrain>> LateJournal::TakeLate() {
  util::MutexLock lock(mu_);
  bool changed = false;
  std::set<std::string> fresh;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!ended_.contains(it->first) || it->second.empty()) {
      ++it;
      continue;
    }
    // A fresh id, so that a late segment of an earlier drain is never taken
    // for this one.
    static thread_local std::mt19937_64 random{std::random_device{}()};
    const std::string id = absl::StrFormat("%013d-%08x", options_.clock->NowMs(),
                                           static_cast<uint32_t>(random()));
    drains_[id] = {it->first, id, std::move(it->second)};
    fresh.insert(id);
    it = pending_.erase(it);
    changed = true;
  }
  // The ids are on disk before anything is written under them; else the
  // drains go back to what is pending.
  if (changed) {
    if (absl::Status s = Rewrite(); !s.ok()) {
      for (auto it = drains_.begin(); it != drains_.end();) {
        if (fresh.contains(it->first)) {
          AppendData(it->second.data, &pending_[it->second.job]);
          it = drains_.erase(it);
        } else {
          ++it;
        }
      }
      return s;
    }
  }
  std::vector<LateDrain> out;
  for (const auto& [id, drain] : drains_) out.push_back(drain);
  return out;
}

absl::Status LateJournal::Written(const std::vector<std::string>& ids) {
  util::MutexLock lock(mu_);
  bool changed = false;
  for (const std::string& id : ids) {
    auto it = drains_.find(id);
    if (it == drains_.end()) continue;
    written_ += it->second.data.rows() + it->second.data.events();
    drains_.erase(it);
    changed = true;
  }
  return changed ? Rewrite() : absl::OkStatus();
}

LateJournal::Stats LateJournal::stats() const {
  util::MutexLock lock(mu_);
  Stats s;
  for (const auto& [job, data] : pending_) {
    s.rows += data.rows();
    s.events += data.events();
  }
  for (const auto& [id, drain] : drains_) {
    s.rows += drain.data.rows();
    s.events += drain.data.events();
  }
  s.bytes = bytes_;
  s.dropped = dropped_;
  s.written = written_;
  return s;
}

}  // namespace trainwatch::archive

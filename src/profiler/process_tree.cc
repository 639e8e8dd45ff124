#include "profiler/process_tree.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "profiler/proc_parsers.h"
#include "profiler/text_scan.h"
#include "util/log.h"

namespace trainwatch::profiler {
namespace {

void Add(JobCounters* a, const JobCounters& b) {
  a->user_ticks += b.user_ticks;
  a->system_ticks += b.system_ticks;
  a->read_bytes += b.read_bytes;
  a->write_bytes += b.write_bytes;
  a->rchar += b.rchar;
  a->wchar += b.wchar;
}

// a - b, each component clamped at 0 (counters of a process read a few
// microseconds apart can make a reaped child's move look like a dip).
uint64_t Sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

JobCounters Diff(const JobCounters& a, const JobCounters& b) {
  return JobCounters{Sub0(a.user_ticks, b.user_ticks), Sub0(a.system_ticks, b.system_ticks),
                     Sub0(a.read_bytes, b.read_bytes), Sub0(a.write_bytes, b.write_bytes),
                     Sub0(a.rchar, b.rchar),           Sub0(a.wchar, b.wchar)};
}

void SubtractFrom(JobCounters* a, const JobCounters& b) { *a = Diff(*a, b); }

}  // namespace

ProcessTree::ProcessTree(std::string proc_root, int64_t root_pid, DegradedCounters* degraded,
                         int full_scan_every)
    : proc_root_(std::move(proc_root)),
      root_pid_(root_pid),
      degraded_(degraded),
      full_scan_every_(full_scan_every < 1 ? 1 : full_scan_every) {
  page_size_ = ::sysconf(_SC_PAGESIZE);
  std::string root_task = absl::StrFormat("%s/%d/task/%d", proc_root_, root_pid_, root_pid_);
  if (::access(root_task.c_str(), F_OK) == 0 &&
      ::access((root_task + "/children").c_str(), F_OK) != 0) {
    children_files_ = false;
    ++degraded_->no_children_files;
    util::LogOnce("profiler.no-children-files",
                  absl::StrFormat("profiler: %s/children is missing (kernel without "
                                  "CONFIG_PROC_CHILDREN); finding the job's processes by "
                                  "scanning %s every tick instead, which costs more",
                                  root_task, proc_root_));
  }
}

ProcessTree::~ProcessTree() = default;

std::unique_ptr<ProcessTree::Member> ProcessTree::OpenMember(int64_t pid) {
  auto m = std::make_unique<Member>();
  m->pid = pid;
  std::string dir = absl::StrFormat("%s/%d", proc_root_, pid);
  if (!m->stat.Open(dir + "/stat", 512).ok()) return nullptr;
  absl::Status io = m->io.Open(dir + "/io", 256);
  m->io_ok = io.ok();
  if (!io.ok() && absl::IsPermissionDenied(io)) {
    ++degraded_->pid_io_unreadable;
    util::LogOnce("profiler.pid-io-unreadable",
                  absl::StrFormat("profiler: %s; the job's I/O bytes leave out such processes "
                                  "(run trainwatch as the job's user)",
                                  std::string(io.message())));
  }
  if (children_files_) {
    // A failure here (the process just exited) leaves the process childless.
    m->leader_children.Open(absl::StrFormat("%s/task/%d/children", dir, pid), 64).IgnoreError();
  }
  return m;
}

bool ProcessTree::ReadMember(Member* m, JobSnapshot* out) {
  absl::StatusOr<std::string_view> text = m->stat.Read();
  // ESRCH: the process has been reaped. (Never empty on a real /proc: fixture
  // trees truncate the file to say the process has gone.)
  if (!text.ok() || text->empty()) return false;
  PidStat st;
  if (!ParsePidStat(*text, &st).ok()) {
    ++degraded_->proc_read_errors;
    return false;
  }
  m->ppid = st.ppid;
  m->last.user_ticks = st.utime + st.cutime;
  m->last.system_ticks = st.stime + st.cstime;
  if (m->io_ok) {
    absl::StatusOr<std::string_view> io_text = m->io.Read();
    PidIo io;
    if (io_text.ok() && ParsePidIo(*io_text, &io).ok()) {
      m->last.read_bytes = io.read_bytes;
      m->last.write_bytes = io.write_bytes;
      m->last.rchar = io.rchar;
      m->last.wchar = io.wchar;
    } else {
      out->io_available = false;
    }
  } else {
    out->io_available = false;
  }
  out->processes += 1;
  out->threads += st.num_threads;
  out->rss_bytes += st.rss_pages * page_size_;
  m->seen_tick = tick_;
  return true;
}

void ProcessTree::ListChildren(Member* m, bool full, std::vector<int64_t>* out) {
  if (m->leader_children.is_open()) {
    absl::StatusOr<std::string_view> text = m->leader_children.Read();
    if (text.ok()) ParseChildren(*text, out);
  }
  if (!full && m->listed) return;
  m->listed = true;
  if (!task_dir_.Open(absl::StrFormat("%s/%d/task", proc_root_, m->pid)).ok()) return;
  task_dir_.ForEachNumber([&](int64_t tid) {
    if (tid == m->pid) return;  // the leader's, read above
    if (!thread_children_
             .Open(absl::StrFormat("%s/%d/task/%d/children", proc_root_, m->pid, tid), 64)
             .ok()) {
      return;  // the thread has exited
    }
    absl::StatusOr<std::string_view> text = thread_children_.Read();
    if (text.ok()) ParseChildren(*text, out);
  });
  thread_children_.Close();
}

void ProcessTree::ParseChildren(std::string_view text, std::vector<int64_t>* out) {
  std::string_view rest = text;
  while (true) {
    while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
    if (rest.empty()) break;
    size_t end = 0;
    while (end < rest.size() && !IsBlank(rest[end])) ++end;
    int64_t pid = 0;
    if (ParseI64(rest.substr(0, end), &pid) && pid > 0) out->push_back(pid);
    rest.remove_prefix(end);
  }
}

void ProcessTree::ScanForChildren(std::vector<int64_t>* out) {
  if (!proc_dir_.is_open() && !proc_dir_.Open(proc_root_).ok()) return;
  scan_.clear();
  ProcFile f;
  proc_dir_.ForEachNumber([&](int64_t pid) {
    if (members_.contains(pid)) return;
    if (!f.Open(absl::StrFormat("%s/%d/stat", proc_root_, pid), 512).ok()) return;
    absl::StatusOr<std::string_view> text = f.Read();
    PidStat st;
    if (text.ok() && ParsePidStat(*text, &st).ok()) scan_.emplace_back(pid, st.ppid);
  });
  // Grandchildren may be listed before their parent joins: repeat until stable.
  bool grew = true;
  std::vector<int64_t> added;
  while (grew) {
    grew = false;
    for (auto& [pid, ppid] : scan_) {
      if (pid == 0) continue;
      bool parent_in =
          members_.contains(ppid) || std::find(added.begin(), added.end(), ppid) != added.end();
      if (parent_in) {
        added.push_back(pid);
        out->push_back(pid);
        pid = 0;
        grew = true;
      }
    }
  }
}

void ProcessTree::Refresh(JobSnapshot* out) {
  *out = JobSnapshot();
  ++tick_;

  // Seed with the root (at the first Refresh only: a pid seen later may be
  // another process) and every known member, then follow children
  // breadth-first. Without children files, a /proc scan after the known
  // members were read adds the processes whose parent is a member.
  queue_.clear();
  if (!members_.contains(root_pid_) && tick_ == 1) queue_.push_back(root_pid_);
  for (auto& [pid, m] : members_) queue_.push_back(pid);
  const bool full = (tick_ - 1) % full_scan_every_ == 0;
  bool scanned = children_files_;
  for (size_t qi = 0; qi < queue_.size() || !scanned; ++qi) {
    if (qi == queue_.size()) {
      scanned = true;
      ScanForChildren(&queue_);
      if (qi == queue_.size()) break;
    }
    int64_t pid = queue_[qi];
    auto it = members_.find(pid);
    Member* m;
    if (it == members_.end()) {
      std::unique_ptr<Member> fresh = OpenMember(pid);
      if (fresh == nullptr) continue;
      m = fresh.get();
      members_.emplace(pid, std::move(fresh));
    } else {
      m = it->second.get();
      if (m->seen_tick == tick_) continue;  // listed twice (a child seen before its turn)
    }
    if (!ReadMember(m, out)) continue;
    if (children_files_) ListChildren(m, full, &queue_);
  }

  // Members that did not answer have gone.
  gone_.clear();
  for (auto& [pid, m] : members_) {
    if (m->seen_tick != tick_) gone_.push_back(pid);
  }
  for (int64_t pid : gone_) {
    Member* m = members_[pid].get();
    auto parent = members_.find(m->ppid);
    bool reaped_by_member = parent != members_.end() && parent->second->seen_tick == tick_;
    // Reaped by a member: its use now sits in that parent's counters, so the
    // previous total that included it stays the right baseline. An orphan's
    // use leaves the job's total: take it out of the baseline too.
    if (!reaped_by_member && have_prev_) SubtractFrom(&prev_total_, m->last);
    members_.erase(pid);
  }

  pids_.clear();
  for (auto& [pid, m] : members_) {
    pids_.push_back(pid);
    Add(&out->total, m->last);
  }
  std::sort(pids_.begin(), pids_.end());
  if (have_prev_) out->delta = Diff(out->total, prev_total_);
  prev_total_ = out->total;
  have_prev_ = true;
}

}  // namespace trainwatch::profiler

#pragma once
// ProcessTree: the training job's processes, followed as they fork, and their
// resource use.
//
// Members are the root pid, every descendant found through
// /proc/<pid>/task/<tid>/children (or, on kernels built without
// CONFIG_PROC_CHILDREN, a scan of /proc's ppid links), and any process seen as
// a member before that is still alive (a worker reparented to init after its
// parent died stays a member).
//
// Counting CPU and I/O without losing short-lived children: each member's
// cumulative counters include what its waited-for children used (stat's
// cutime/cstime; /proc/<pid>/io folds reaped children in too). The job's
// cumulative total is the sum over live members; when a member disappears
// and its last-seen parent is a live member, its use has moved into that
// parent's counters and the total stays continuous; when it was an orphan its
// use leaves the total (at most one interval of that process is lost). So a
// child that forks, burns CPU and is reaped between two ticks is still
// counted. Call Refresh before the root is reaped (waitid WNOWAIT) to count
// the root's last interval too.
//
// Cost per tick: one pread of stat, io and the leader thread's children per
// member, on descriptors kept open while the process lives (three per
// process; a reused pid gets fresh ones: the old descriptors answer ESRCH).
// Other threads' children files (opened, read and closed, so that a job with
// thousands of threads does not hold thousands of descriptors) are read every
// `full_scan_every` Refresh calls and at a member's first sighting: most
// processes fork from their main thread, and a child of another thread found
// late still has all its CPU counted (it is new, so all its use is in the
// interval; reaped before it was seen, its use is in its parent's cutime).
// Thread safety: none.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "profiler/proc_file.h"
#include "profiler/profiler_options.h"

namespace trainwatch::profiler {

// Cumulative use of the job, waited-for children included.
struct JobCounters {
  uint64_t user_ticks = 0;  // USER_HZ ticks
  uint64_t system_ticks = 0;
  uint64_t read_bytes = 0;  // storage
  uint64_t write_bytes = 0;
  uint64_t rchar = 0;  // every read()/write(), pipes and sockets included
  uint64_t wchar = 0;
};

struct JobSnapshot {
  int processes = 0;  // live members, zombies included
  int64_t threads = 0;
  int64_t rss_bytes = 0;     // sum of members' RSS (pages shared between them count twice)
  JobCounters total;         // cumulative, as defined above
  JobCounters delta;         // increase since the previous Refresh (all zero at the first)
  bool io_available = true;  // false when some member's /proc/<pid>/io was refused
};

class ProcessTree {
 public:
  // `degraded` must outlive the tree.
  // full_scan_every >= 1: see above (the Sampler makes it one second's worth
  // of ticks).
  ProcessTree(std::string proc_root, int64_t root_pid, DegradedCounters* degraded,
              int full_scan_every = 1);
  ~ProcessTree();

  void Refresh(JobSnapshot* out);

  // Live members' pids, sorted; valid until the next Refresh.
  const std::vector<int64_t>& pids() const { return pids_; }
  bool uses_children_files() const { return children_files_; }
  int64_t root_pid() const { return root_pid_; }

 private:
  struct Member {
    int64_t pid = 0;
    int64_t ppid = 0;
    ProcFile stat;
    ProcFile io;
    bool io_ok = false;
    ProcFile leader_children;  // task/<pid>/children
    bool listed = false;       // all threads' children read at least once
    JobCounters last;          // cumulative at the last successful read
    uint64_t seen_tick = 0;    // Refresh count when last read successfully
  };

  // Opens a member's files; nullptr when the process is already gone.
  std::unique_ptr<Member> OpenMember(int64_t pid);
  // Reads stat and io; false when the process has gone.
  bool ReadMember(Member* m, JobSnapshot* out);
  // Appends the pids of m's children: of all its threads when `full` (or
  // never listed), else of its leader thread only.
  void ListChildren(Member* m, bool full, std::vector<int64_t>* out);
  // Appends the pids in a children file's text ("pid pid pid ").
  static void ParseChildren(std::string_view text, std::vector<int64_t>* out);
  // Without children files: appends non-member processes whose parent is a member.
  void ScanForChildren(std::vector<int64_t>* out);

  std::string proc_root_;
  int64_t root_pid_;
  DegradedCounters* degraded_;
  bool children_files_ = true;
  int full_scan_every_;
  int64_t page_size_;
  uint64_t tick_ = 0;
  absl::flat_hash_map<int64_t, std::unique_ptr<Member>> members_;
  JobCounters prev_total_;
  bool have_prev_ = false;
  // Scratch, reused every Refresh.
  std::vector<int64_t> queue_;
  DirReader task_dir_;        // scratch: <proc>/<pid>/task of the member being listed
  ProcFile thread_children_;  // scratch: a non-leader thread's children file
  std::vector<int64_t> pids_;
  std::vector<int64_t> gone_;
  std::vector<std::pair<int64_t, int64_t>> scan_;  // (pid, ppid) in fallback mode
  DirReader proc_dir_;
};

}  // namespace trainwatch::profiler

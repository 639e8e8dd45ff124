#pragma once
// BoundedQueue<T>: a multi-producer, multi-consumer FIFO with a fixed capacity.
// Producers choose between TryPush (never blocks; false when full, and the
// caller counts the drop) and Push (waits until there is room or the queue is
// closed). Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>
#include "util/mutex.h"

namespace trainwatch::util {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // False when full or closed; the item is not taken.
  bool TryPush(T item) {
    util::MutexLock lock(mu_);
    if (closed_ || items_.size() >= capacity_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Waits for room; false when the queue is closed.
  bool Push(T item) {
    util::MutexLock lock(mu_);
    lock.Wait(not_full_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Waits up to `timeout` for an item; nullopt on timeout or when closed and drained.
  template <typename Rep, typename Period>
  std::optional<T> PopFor(std::chrono::duration<Rep, Period> timeout) {
    util::MutexLock lock(mu_);
    if (!lock.WaitFor(not_empty_, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !items_.empty(); })) {
      return std::nullopt;
    }
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // Takes everything queued now (possibly nothing), without waiting.
  std::vector<T> Drain() {
    util::MutexLock lock(mu_);
    std::vector<T> out;
    out.reserve(items_.size());
    for (T& item : items_) out.push_back(std::move(item));
    items_.clear();
    not_full_.notify_all();
    return out;
  }

  // Wakes every waiter; later pushes fail, pops drain what is left.
  void Close() {
    util::MutexLock lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    util::MutexLock lock(mu_);
    return closed_;
  }
  size_t size() const {
    util::MutexLock lock(mu_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable util::Mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainwatch::util

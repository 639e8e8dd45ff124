#pragma once
// Mutexes whose contracts the compiler checks. util::Mutex and
// util::SharedMutex are std::mutex and std::shared_mutex annotated as
// capabilities, so that clang's -Wthread-safety (the suite's
// thread_safety_check, tools/thread_safety_check.py) proves that every member
// marked ABSL_GUARDED_BY(mu_) is touched only with mu_ held, and that every
// function marked ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) is called with it held.
// libstdc++'s own mutexes carry no annotations, so a member guarded by one
// cannot be checked: use these instead.
//
//   util::Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   std::condition_variable changed_;
//
//   util::MutexLock lock(mu_);
//   lock.Wait(changed_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ > 0; });
//
// Condition variables are plain std::condition_variable, waited on through the
// MutexLock (which hands it the std::mutex inside); a predicate that reads
// guarded members says so with ABSL_EXCLUSIVE_LOCKS_REQUIRED (it runs with the
// mutex held).
//
// A thread that a std::jthread runs waits with its std::stop_token on a
// std::condition_variable_any, so that request_stop() wakes it:
//
//   std::condition_variable_any work_;
//
//   void Loop(std::stop_token stop) {
//     util::MutexLock lock(mu_);
//     while (lock.Wait(work_, stop, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ > 0; })) {
//       ...
//     }
//   }
//
// (std::condition_variable_any registers a std::stop_callback that notifies
// under a mutex of its own, so a request between the check and the wait is
// not lost; notifying a std::condition_variable from a callback under mu_
// could deadlock, since the callback runs in whichever thread asks for the
// stop.) SleepFor and SleepUntil (util/stop_wait.h) sleep until a time or
// a stop, with no mutex.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <stop_token>

#include "absl/base/thread_annotations.h"

namespace trainwatch::util {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;  // waits on std::condition_variable with mu_
  std::mutex mu_;
};

// Holds a Mutex for its scope. Unlock() and Lock() let go of it and take it
// again inside the scope (e.g. around a slow call); the destructor unlocks
// only when it is held.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() ABSL_UNLOCK_FUNCTION() {
    held_ = false;
    mu_.unlock();
  }
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.lock();
    held_ = true;
  }

  // Waits until `ready()` (called with the mutex held), letting go of the
  // mutex while it waits.
  template <class Predicate>
  void Wait(std::condition_variable& cv, Predicate ready) {
    Adopted lock(mu_);
    cv.wait(lock.lock, std::move(ready));
  }
  // As Wait, for at most `timeout`; returns ready().
  template <class Rep, class Period, class Predicate>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> timeout,
               Predicate ready) {
    Adopted lock(mu_);
    return cv.wait_for(lock.lock, timeout, std::move(ready));
  }
  // As Wait, until `deadline`; returns ready().
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> deadline,
                 Predicate ready) {
    Adopted lock(mu_);
    return cv.wait_until(lock.lock, deadline, std::move(ready));
  }
  // The same waits on a std::condition_variable_any (one that stop-aware
  // waiters share).
  template <class Predicate>
  void Wait(std::condition_variable_any& cv, Predicate ready) {
    Adopted lock(mu_);
    cv.wait(lock.lock, std::move(ready));
  }
  // Stop-aware waits: as Wait, WaitFor and WaitUntil, but they also return as
  // soon as `stop` is requested (at once when it already was). Each returns
  // ready(), so false means a stop (or the timeout) came first.
  template <class Predicate>
  bool Wait(std::condition_variable_any& cv, std::stop_token stop, Predicate ready) {
    Adopted lock(mu_);
    return cv.wait(lock.lock, std::move(stop), std::move(ready));
  }
  template <class Rep, class Period, class Predicate>
  bool WaitFor(std::condition_variable_any& cv, std::stop_token stop,
               std::chrono::duration<Rep, Period> timeout, Predicate ready) {
    Adopted lock(mu_);
    return cv.wait_for(lock.lock, std::move(stop), timeout, std::move(ready));
  }
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(std::condition_variable_any& cv, std::stop_token stop,
                 std::chrono::time_point<Clock, Duration> deadline, Predicate ready) {
    Adopted lock(mu_);
    return cv.wait_until(lock.lock, std::move(stop), deadline, std::move(ready));
  }
  // Waits once for a notification (spurious wake-ups included), no predicate.
  void WaitOnce(std::condition_variable& cv) {
    Adopted lock(mu_);
    cv.wait(lock.lock);
  }
  // Waits once for a notification or until `deadline`, with no predicate.
  template <class Clock, class Duration>
  std::cv_status WaitOnceUntil(std::condition_variable& cv,
                               std::chrono::time_point<Clock, Duration> deadline) {
    Adopted lock(mu_);
    return cv.wait_until(lock.lock, deadline);
  }
  // Waits once for a notification or `timeout`, with no predicate.
  template <class Rep, class Period>
  void WaitOnceFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> timeout) {
    Adopted lock(mu_);
    cv.wait_for(lock.lock, timeout);
  }

 private:
  // The held std::mutex as the std::unique_lock that std::condition_variable
  // waits with (it unlocks and relocks it), handed back when the wait ends.
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };
  Mutex& mu_;
  bool held_ = true;
};

class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void lock_shared() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void unlock_shared() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class ABSL_SCOPED_LOCKABLE WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class ABSL_SCOPED_LOCKABLE ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.lock_shared();
  }
  ~ReaderLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace trainwatch::util

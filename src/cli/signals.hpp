// Signal handling for `run`: the signals are blocked in every thread and read
// synchronously from a signalfd by the main thread, which never wakes up
// unless a signal or an event arrives.
//
// Order matters: construct SignalSetup in main() before any thread exists
// (the guard's renewal scheduler is a thread, a store may start others), so
// every thread inherits the mask and no signal is delivered asynchronously.
//
// The constructors throw std::system_error when the kernel refuses (out of
// file descriptors); the tool reports that as an internal error.
#pragma once

#include <signal.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "instance/clock.hpp"

namespace instance::cli {

// The signals `run` forwards to the child's process group.
inline constexpr std::array<int, 6> kForwardedSignals = {SIGTERM, SIGINT,  SIGHUP,
                                                         SIGQUIT, SIGUSR1, SIGUSR2};

// Blocks kForwardedSignals and SIGCHLD in the calling thread and sets SIGCHLD
// to its default action (an inherited SIG_IGN would let the kernel reap the
// child and lose its exit status). Remembers the original mask and
// dispositions so the child can be given them back.
//
// Process-wide and meant to last until the process exits: it does not undo
// itself on destruction, because unblocking would deliver any signal still
// pending and kill the tool before it reports the child's status.
class SignalSetup {
 public:
  SignalSetup();
  SignalSetup(const SignalSetup&) = delete;
  SignalSetup& operator=(const SignalSetup&) = delete;

  // The blocked set: kForwardedSignals and SIGCHLD.
  const sigset_t& blocked() const noexcept { return blocked_; }

  // True when `signal` was ignored when the tool started (nohup ignores
  // SIGHUP): the tool then neither acts on it nor forwards it, and the child
  // inherits the ignoring.
  bool was_ignored(int signal) const noexcept;

  // Gives back the original mask and SIGCHLD disposition. Async-signal-safe:
  // for the child between fork and exec.
  void restore_in_child() const noexcept;

 private:
  sigset_t blocked_{};
  sigset_t original_mask_{};
  struct sigaction original_sigchld_ {};
  std::array<bool, NSIG> ignored_{};
};

// A signalfd over SignalSetup::blocked(), non-blocking and close-on-exec.
class SignalFd {
 public:
  explicit SignalFd(const SignalSetup& setup);
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const noexcept { return fd_; }
  // Every signal queued now, in arrival order (standard signals coalesce).
  std::vector<int> drain();

 private:
  int fd_ = -1;
};

// A wake-up another thread can post (an eventfd): the claim worker says "done"
// through it, and the guard's renewal thread reports the loss of the claim. notify() is thread-safe
// and async-signal-safe.
class Wakeup {
 public:
  Wakeup();
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const noexcept { return fd_; }
  void notify() const noexcept;
  // Consumes pending notifications; true when there were any.
  bool consume() const noexcept;

 private:
  int fd_ = -1;
};

struct Ready {
  bool signals = false;
  bool wakeup = false;
};

// Blocks, without timeout and without periodic wake-ups, until a signal is
// queued or the wake-up is posted.
Ready wait_for_events(const SignalFd& signals, const Wakeup& wakeup);

// Like the above, but also returns (with nothing ready) once the BootClock
// reaches `until` (at once when it has passed; nullopt: never). The wait is
// a timer on CLOCK_BOOTTIME at that absolute time, not a timeout: a process
// stopped (SIGSTOP), or a host suspended, past `until` returns the moment it
// runs again, whatever happened to CLOCK_MONOTONIC meanwhile.
Ready wait_for_events(const SignalFd& signals, const Wakeup& wakeup, std::optional<MonoTime> until);

// "SIGTERM" for SIGTERM; "signal N" for anything unnamed.
std::string signal_name(int signal);

}  // namespace instance::cli

#include "signals.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>

namespace instance::cli {

namespace {

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

SignalSetup::SignalSetup() {
  sigemptyset(&blocked_);
  for (int sig : kForwardedSignals) sigaddset(&blocked_, sig);
  sigaddset(&blocked_, SIGCHLD);

  for (int sig : kForwardedSignals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0) ignored_[sig] = current.sa_handler == SIG_IGN;
  }
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &blocked_, &original_mask_); rc != 0) {
    errno = rc;
    throw_errno("pthread_sigmask");
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  if (::sigaction(SIGCHLD, &dfl, &original_sigchld_) != 0) throw_errno("sigaction(SIGCHLD)");
}

bool SignalSetup::was_ignored(int signal) const noexcept {
  return signal > 0 && signal < NSIG && ignored_[static_cast<std::size_t>(signal)];
}

void SignalSetup::restore_in_child() const noexcept {
  ::sigaction(SIGCHLD, &original_sigchld_, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
}

SignalFd::SignalFd(const SignalSetup& setup)
    : fd_(::signalfd(-1, &setup.blocked(), SFD_NONBLOCK | SFD_CLOEXEC)) {
  if (fd_ < 0) throw_errno("signalfd");
}

SignalFd::~SignalFd() { ::close(fd_); }

std::vector<int> SignalFd::drain() {
  std::vector<int> out;
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      out.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return out;  // EAGAIN: nothing more queued
  }
}

Wakeup::Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw_errno("eventfd");
}

Wakeup::~Wakeup() { ::close(fd_); }

void Wakeup::notify() const noexcept {
  const std::uint64_t one = 1;
  // Only fails when the counter would overflow: a wake-up is then pending anyway.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

bool Wakeup::consume() const noexcept {
  std::uint64_t count = 0;
  return ::read(fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count) && count > 0;
}

Ready wait_for_events(const SignalFd& signals, const Wakeup& wakeup) {
  return wait_for_events(signals, wakeup, std::nullopt);
}

Ready wait_for_events(const SignalFd& signals, const Wakeup& wakeup,
                      std::optional<MonoTime> until) {
  // One timer per thread, made at its first timed wait and kept: only the
  // main thread waits here.
  thread_local const int timer = [] {
    const int fd = ::timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) throw_errno("timerfd_create(CLOCK_BOOTTIME)");
    return fd;
  }();
  if (until) {
    // Relative, not TFD_TIMER_ABSTIME: a CLOCK_BOOTTIME timer counts a
    // suspend either way, and a relative one cannot be shifted by whatever
    // rewrites absolute times (libfaketime, in the multi-host harness, moved
    // an absolute deadline by its offset). Due already: the smallest value,
    // since an all-zero one would disarm.
    const auto in = std::max(*until - BootClock::now(), Duration{1});
    itimerspec spec{};
    spec.it_value.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(in).count();
    spec.it_value.tv_nsec = (in % std::chrono::seconds(1)).count();
    if (::timerfd_settime(timer, 0, &spec, nullptr) != 0) {
      throw_errno("timerfd_settime");
    }
  }
  std::array<pollfd, 3> fds{pollfd{signals.fd(), POLLIN, 0}, pollfd{wakeup.fd(), POLLIN, 0},
                            pollfd{timer, POLLIN, 0}};
  const nfds_t watched = until ? 3 : 2;
  Ready ready;
  for (;;) {
    const int n = ::poll(fds.data(), watched, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("poll");
    ready = Ready{(fds[0].revents & POLLIN) != 0, (fds[1].revents & POLLIN) != 0};
    break;
  }
  if (until) {
    const itimerspec off{};
    ::timerfd_settime(timer, 0, &off, nullptr);  // disarmed, and any expiry count cleared
  }
  return ready;
}

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal); abbrev != nullptr) {
    return std::string("SIG") + abbrev;
  }
  return "signal " + std::to_string(signal);
}

}  // namespace instance::cli

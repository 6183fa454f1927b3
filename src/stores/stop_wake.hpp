// Waits on a server store's socket until it is readable, a deadline passes
// or a stop is requested: the waits of Store::await_change (Redis pub/sub,
// PostgreSQL LISTEN). A stop request writes to an eventfd that poll() watches
// beside the socket, so a stop ends the wait at once, not at a slice's end.
// Header-only: each store module that waits includes it.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>

namespace instance::detail {

class StopWake {
 public:
  enum class Ready { readable, timeout, stopped, failed };

  explicit StopWake(std::stop_token stop)
      : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), stop_(stop) {
    callback_.emplace(std::move(stop), Wake{fd_});
  }
  ~StopWake() {
    callback_.reset();  // waits for a callback running now, then none runs
    if (fd_ >= 0) ::close(fd_);
  }
  StopWake(const StopWake&) = delete;
  StopWake& operator=(const StopWake&) = delete;

  // Waits for `socket` to be readable until `deadline` (steady clock).
  // failed: poll() itself failed, or the eventfd could not be made and so a
  // stop could not be seen (errno set).
  Ready wait(int socket, std::chrono::steady_clock::time_point deadline) const {
    while (true) {
      if (stop_.stop_requested()) return Ready::stopped;
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Ready::timeout;
      pollfd fds[2] = {{.fd = socket, .events = POLLIN, .revents = 0},
                       {.fd = fd_, .events = POLLIN, .revents = 0}};
      // Without an eventfd, slices of 50 ms still see a stop in time.
      const std::chrono::milliseconds::rep slice = fd_ >= 0 ? 60000 : 50;
      const int n = ::poll(fds, fd_ >= 0 ? 2 : 1, static_cast<int>(std::min(left.count(), slice)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Ready::failed;
      }
      if (fds[1].revents != 0 || stop_.stop_requested()) return Ready::stopped;
      if (fds[0].revents != 0) return Ready::readable;  // data, hang-up or error: the reader tells
    }
  }

 private:
  int fd_;
  std::stop_token stop_;
  struct Wake {
    int fd;
    void operator()() const noexcept {
      const std::uint64_t one = 1;
      if (fd >= 0) [[maybe_unused]]
        auto n = ::write(fd, &one, sizeof one);
    }
  };
  std::optional<std::stop_callback<Wake>> callback_;
};

}  // namespace instance::detail

// Random bytes from the operating system (instance/sdk/random.hpp).
#include "instance/sdk/random.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

namespace instance {
namespace {

// /dev/urandom, for a kernel without getrandom(2).
void read_urandom(std::span<unsigned char> out) {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open /dev/urandom");
  std::size_t got = 0;
  while (got < out.size()) {
    const auto n = ::read(fd, out.data() + got, out.size() - got);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      throw std::system_error(error, std::generic_category(), "read /dev/urandom");
    }
  }
  ::close(fd);
}

}  // namespace

void random_bytes(std::span<unsigned char> out) {
  std::size_t got = 0;
  while (got < out.size()) {
    const auto n = ::getrandom(out.data() + got, out.size() - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      read_urandom(out.subspan(got));
      return;
    }
  }
}

std::string random_hex(std::size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::vector<unsigned char> raw(bytes);
  random_bytes(raw);
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xF]);
  }
  return out;
}

}  // namespace instance

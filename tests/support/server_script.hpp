// What the integration tests' server helpers share: running the start/stop
// scripts in tests/integration/servers/, reading what they leave behind, and
// picking a free loopback port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "support/files.hpp"

namespace instance::testing {

// `text` as one single-quoted shell word.
inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command; its exit status, or -1 when it did not exit.
inline int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// A loopback TCP port nobody listens on right now (0 when none was found),
// taken below the kernel's ephemeral range as tests/support/shell.sh's
// free_port is: a port from that range can go to the client side of some
// other test's connection before the server binds it.
inline int free_port() {
  int low = 32768;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
      !(range >> low) || low <= 11000) {
    low = 32768;  // unreadable, or too little left below it: the default's bound
  }
  std::minstd_rand pick(std::random_device{}());
  std::uniform_int_distribution<int> ports(10000, low - 1);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = ports(pick);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (bound) return port;
  }
  return 0;
}

}  // namespace instance::testing

// hosts-fault-proxy: a TCP proxy that puts faults between a guard and its
// store server in the multi-host harness (tests/hosts/). Debian's kernels
// here have no netem, so latency, stalls, resets and slow links come from
// this program instead.
//
//   hosts-fault-proxy --control SOCKET --forward LISTEN=TARGET [--forward ...]
//   hosts-fault-proxy --send SOCKET COMMAND   sends COMMAND, prints the answer;
//                                             exit 0 when it is "ok..."
//
// LISTEN and TARGET are IPv4 ADDRESS:PORT. Each --forward listens on LISTEN
// and opens a connection to TARGET for every client. Once every listener is
// bound it prints "ready" on stdout. The fault in force is set through the
// UNIX stream socket SOCKET: one line per connection, answered "ok" or
// "error: ...":
//   pass            forward at once (the default)
//   delay MS        hold every chunk of bytes MS milliseconds, both ways
//   slow BYTES      at most BYTES bytes per second each way per connection
//   stall           forward nothing and accept no new client until `pass`
//                   (connections stay open; bytes already read wait)
//   reset           reset (RST) every open connection now; later ones pass
//   count           answer "ok <open connections>"
// A fault applies to every forward and every connection, open or new, until
// the next command replaces it. Single-threaded (poll); ends on SIGTERM or
// SIGINT.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

volatile sig_atomic_t g_stop = 0;
void on_signal(int /*sig*/) { g_stop = 1; }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "hosts-fault-proxy: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

void set_nonblocking(int fd) {
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) die("fcntl");
}

std::optional<sockaddr_in> parse_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const std::string host(text.substr(0, colon));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return std::nullopt;
  const int port = std::atoi(std::string(text.substr(colon + 1)).c_str());
  if (port <= 0 || port > 65535) return std::nullopt;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// The fault in force.
struct Fault {
  milliseconds delay{0};
  long bytes_per_second = 0;  // 0: unlimited
  bool stalled = false;
};

struct Chunk {
  Clock::time_point due;
  std::string bytes;
};

// One direction of a connection: bytes read from `from`, waiting for `to`.
struct Pipe {
  std::deque<Chunk> queue;
  std::size_t queued = 0;
  bool from_closed = false;
  Clock::time_point next_send{};  // slow: when the next write may go
};

struct Connection {
  int client = -1;
  int server = -1;
  bool connected = false;   // to the target
  Pipe up;                  // client -> server
  Pipe down;                // server -> client
  bool client_hup = false;  // the client's socket is done both ways: no more polling
  bool server_hup = false;
  bool dead = false;  // closed when swept: with RST unless `graceful`
  bool graceful = false;
};

constexpr std::size_t kMaxQueued = 1 << 20;
constexpr std::size_t kReadSize = 16384;

// Reads what `from` has into `pipe`, due after the fault's delay.
void read_into(int from, Pipe& pipe, const Fault& fault, Connection& c) {
  char buf[kReadSize];
  const ssize_t n = ::read(from, buf, sizeof buf);
  if (n > 0) {
    pipe.queue.push_back({Clock::now() + fault.delay, std::string(buf, static_cast<size_t>(n))});
    pipe.queued += static_cast<size_t>(n);
  } else if (n == 0) {
    pipe.from_closed = true;
  } else if (errno != EAGAIN && errno != EINTR) {
    c.dead = true;
  }
}

// Writes what is due in `pipe` to `to`; returns false on a broken peer.
bool write_from(int to, Pipe& pipe, const Fault& fault) {
  const auto now = Clock::now();
  while (!pipe.queue.empty() && pipe.queue.front().due <= now) {
    if (fault.bytes_per_second > 0 && now < pipe.next_send) return true;
    auto& chunk = pipe.queue.front();
    std::size_t size = chunk.bytes.size();
    if (fault.bytes_per_second > 0) {
      // Sends in slices of a twentieth of a second's budget.
      size = std::min<std::size_t>(size, std::max<long>(1, fault.bytes_per_second / 20));
    }
    const ssize_t n = ::send(to, chunk.bytes.data(), size, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    pipe.queued -= static_cast<size_t>(n);
    chunk.bytes.erase(0, static_cast<size_t>(n));
    if (chunk.bytes.empty()) pipe.queue.pop_front();
    if (fault.bytes_per_second > 0) {
      pipe.next_send = now + std::chrono::microseconds(n * 1000000L / fault.bytes_per_second);
    }
  }
  return true;
}

void reset_fd(int fd) {
  if (fd < 0) return;
  const linger l{1, 0};  // close with RST
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

struct Forward {
  int listener = -1;
  sockaddr_in target{};
};

std::string handle_command(std::string line, Fault& fault,
                           std::vector<std::unique_ptr<Connection>>& conns) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  const auto space = line.find(' ');
  const std::string verb = line.substr(0, space);
  const long arg = space == std::string::npos ? -1 : std::atol(line.c_str() + space + 1);
  if (verb == "pass") {
    fault = Fault{};
  } else if (verb == "delay" && arg >= 0) {
    fault = Fault{};
    fault.delay = milliseconds(arg);
  } else if (verb == "slow" && arg > 0) {
    fault = Fault{};
    fault.bytes_per_second = arg;
  } else if (verb == "stall") {
    fault = Fault{};
    fault.stalled = true;
  } else if (verb == "reset") {
    fault = Fault{};
    for (auto& c : conns) {
      reset_fd(c->client);
      reset_fd(c->server);
      c->client = c->server = -1;
      c->dead = true;
    }
  } else if (verb == "count") {
    return "ok " + std::to_string(conns.size()) + "\n";
  } else {
    return "error: unknown command \"" + line + "\"; expected pass, delay MS, slow BYTES, " +
           "stall, reset or count\n";
  }
  return "ok\n";
}

int listen_on(const sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) die("bind");
  if (::listen(fd, 128) != 0) die("listen");
  return fd;
}

}  // namespace

// --send: one command to a running proxy.
int send_command(const char* path, const std::string& command) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::snprintf(un.sun_path, sizeof un.sun_path, "%s", path);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) die("connect");
  const std::string line = command + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) die("write");
  std::string reply;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  std::fputs(reply.c_str(), stdout);
  return reply.rfind("ok", 0) == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--send") return send_command(argv[2], argv[3]);
  std::vector<Forward> forwards;
  std::string control_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string_view value = argv[i + 1];
    if (flag == "--control") {
      control_path = value;
    } else if (flag == "--forward") {
      const auto eq = value.find('=');
      const auto from = parse_address(value.substr(0, eq));
      const auto to =
          eq == std::string_view::npos ? std::nullopt : parse_address(value.substr(eq + 1));
      if (!from || !to) {
        std::fprintf(stderr, "hosts-fault-proxy: --forward wants ADDR:PORT=ADDR:PORT, got %s\n",
                     argv[i + 1]);
        return 2;
      }
      forwards.push_back({listen_on(*from), *to});
    }
  }
  if (forwards.empty() || control_path.empty()) {
    std::fprintf(stderr, "usage: hosts-fault-proxy --control SOCKET --forward LISTEN=TARGET...\n");
    return 2;
  }
  ::signal(SIGTERM, on_signal);
  ::signal(SIGINT, on_signal);
  ::signal(SIGPIPE, SIG_IGN);

  const int control = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  if (control_path.size() >= sizeof un.sun_path) {
    std::fprintf(stderr, "hosts-fault-proxy: control socket path too long\n");
    return 2;
  }
  std::strcpy(un.sun_path, control_path.c_str());
  ::unlink(control_path.c_str());
  if (::bind(control, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) die("bind control");
  if (::listen(control, 16) != 0) die("listen control");
  std::printf("ready\n");
  std::fflush(stdout);

  Fault fault;
  std::vector<std::unique_ptr<Connection>> conns;
  while (!g_stop) {
    std::vector<pollfd> fds;
    fds.push_back({control, POLLIN, 0});
    for (const auto& f : forwards)
      fds.push_back({f.listener, static_cast<short>(fault.stalled ? 0 : POLLIN), 0});
    const auto now = Clock::now();
    auto wake = now + milliseconds(1000);
    for (auto& c : conns) {
      short cev = 0;
      short sev = 0;
      if (!fault.stalled) {
        if (!c->up.from_closed && c->up.queued < kMaxQueued) cev |= POLLIN;
        if (c->connected && !c->down.from_closed && c->down.queued < kMaxQueued) sev |= POLLIN;
        for (Pipe* p : {&c->up, &c->down}) {
          if (p->queue.empty()) continue;
          auto due = std::max(p->queue.front().due, p->next_send);
          if (due <= now) {
            (p == &c->up ? sev : cev) |= POLLOUT;
          } else {
            wake = std::min(wake, due);
          }
        }
      }
      if (!c->connected) sev |= POLLOUT;
      // A stalled proxy, or a socket closed both ways, would report POLLHUP at once
      // on every poll: such sockets are left out (-1) rather than spun on.
      const bool skip = fault.stalled && c->connected;
      fds.push_back({skip || c->client_hup ? -1 : c->client, cev, 0});
      fds.push_back({skip || c->server_hup ? -1 : c->server, sev, 0});
    }
    const auto timeout =
        std::chrono::duration_cast<milliseconds>(wake - now).count() + 1;  // round up
    if (::poll(fds.data(), fds.size(), static_cast<int>(timeout)) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[0].revents & POLLIN) {
      const int cfd = ::accept4(control, nullptr, nullptr, SOCK_CLOEXEC);
      if (cfd >= 0) {
        char buf[256];
        std::string line;
        for (int tries = 0; tries < 100 && line.find('\n') == std::string::npos; ++tries) {
          const ssize_t n = ::read(cfd, buf, sizeof buf);
          if (n <= 0) break;
          line.append(buf, static_cast<size_t>(n));
        }
        const std::string reply = handle_command(line, fault, conns);
        (void)!::write(cfd, reply.data(), reply.size());
        ::close(cfd);
      }
    }
    for (std::size_t i = 0; i < forwards.size(); ++i) {
      if (!(fds[1 + i].revents & POLLIN)) continue;
      const int client = ::accept4(forwards[i].listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      set_nonblocking(client);
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      const int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const int rc = ::connect(server, reinterpret_cast<const sockaddr*>(&forwards[i].target),
                               sizeof forwards[i].target);
      if (rc != 0 && errno != EINPROGRESS) {
        reset_fd(client);
        ::close(server);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->client = client;
      c->server = server;
      conns.push_back(std::move(c));
    }
    const std::size_t base = 1 + forwards.size();
    for (std::size_t i = 0; i < conns.size() && base + 2 * i + 1 < fds.size(); ++i) {
      auto& c = *conns[i];
      if (c.dead) continue;
      const auto crev = fds[base + 2 * i].revents;
      const auto srev = fds[base + 2 * i + 1].revents;
      if (!c.connected && (srev & (POLLOUT | POLLERR | POLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.server, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          c.dead = true;  // the client sees a reset, as it would from the server
          continue;
        }
        c.connected = true;
      }
      if (fault.stalled) continue;
      if (crev & POLLIN) read_into(c.client, c.up, fault, c);
      if (c.connected && (srev & POLLIN)) read_into(c.server, c.down, fault, c);
      if ((crev | srev) & POLLERR) c.dead = true;
      if (crev & POLLHUP) {
        c.client_hup = c.up.from_closed = true;
        if (!c.down.queue.empty()) c.dead = true;  // nobody left to deliver to
      }
      if (srev & POLLHUP) c.server_hup = c.down.from_closed = true;
      if (c.connected && !write_from(c.server, c.up, fault)) c.dead = true;
      if (!write_from(c.client, c.down, fault)) c.dead = true;
      // A side that closed, once what it sent is through, closes the other way too.
      if (c.up.from_closed && c.up.queue.empty() && c.connected) ::shutdown(c.server, SHUT_WR);
      if (c.down.from_closed && c.down.queue.empty()) ::shutdown(c.client, SHUT_WR);
      if (c.up.from_closed && c.down.from_closed && c.up.queue.empty() && c.down.queue.empty()) {
        c.dead = c.graceful = true;
      }
    }
    std::erase_if(conns, [](const std::unique_ptr<Connection>& c) {
      if (!c->dead) return false;
      for (const int fd : {c->client, c->server}) {
        if (fd < 0) continue;
        if (c->graceful) {
          ::close(fd);
        } else {
          reset_fd(fd);
        }
      }
      return true;
    });
  }
  ::unlink(control_path.c_str());
  return 0;
}

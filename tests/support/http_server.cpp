#include "support/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>

namespace instance::testing {
namespace {

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The request line and headers of `head` (the text before the blank line).
HttpRequest parse_head(const std::string& head) {
  HttpRequest request;
  std::size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.find(' ', sp1 + 1);
  request.method = request_line.substr(0, sp1);
  request.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  while (line_end != std::string::npos) {
    const auto start = line_end + 2;
    line_end = head.find("\r\n", start);
    const auto line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
    auto value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    request.headers[name] = value;
  }
  return request;
}

std::string reply_text(const HttpRequest& request, const HttpReply& reply) {
  // The reason phrase means nothing to a client (the store's messages take
  // theirs from the status code): one word for every status.
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Status\r\n";
  for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  if (reply.close) out += "Connection: close\r\n";
  out += "\r\n";
  if (request.method != "HEAD") out += reply.body;
  return out;
}

}  // namespace

HttpServer::HttpServer(std::string name, Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(name + ": cannot listen");
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpServer::~HttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (int fd : open_fds_) ::close(fd);
}

void HttpServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void HttpServer::serve(int fd) {
  std::string buffer;
  char chunk[65536];
  auto fill = [&]() {
    pollfd p{fd, POLLIN, 0};
    while (!stopping_) {
      const int r = ::poll(&p, 1, 100);
      if (r < 0) return false;
      if (r == 0) continue;
      const auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  };
  while (!stopping_) {
    std::size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return;
    }
    HttpRequest request = parse_head(buffer.substr(0, header_end));
    buffer.erase(0, header_end + 4);
    std::size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      length = std::stoul(it->second);
    }
    while (buffer.size() < length) {
      if (!fill()) return;
    }
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);
    const HttpReply reply = handler_(request);
    if (!send_all(fd, reply_text(request, reply)) || reply.close) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace instance::testing

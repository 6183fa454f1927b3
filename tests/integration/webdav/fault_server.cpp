#include "fault_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace instance::testing {
namespace {

std::string_view status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 207:
      return "Multi-Status";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 412:
      return "Precondition Failed";
    case 425:
      return "Too Early";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

FaultServer::FaultServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("fault server: cannot listen");
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultServer::~FaultServer() {
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

std::vector<FaultRequest> FaultServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void FaultServer::accept_loop() {
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

void FaultServer::serve(int fd) {
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
    FaultRequest request;
    const std::string head = buffer.substr(0, header_end);
    buffer.erase(0, header_end + 4);
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
    std::size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      length = std::stoul(it->second);
    }
    while (buffer.size() < length) {
      if (!fill()) return;
    }
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);

    FaultReply reply;
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      reply = handler_(request);
    }
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                      std::string(status_text(reply.status)) + "\r\n";
    for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
    out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    if (reply.close) out += "Connection: close\r\n";
    out += "\r\n";
    if (request.method != "HEAD") out += reply.body;
    if (!send_all(fd, out) || reply.close) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

FaultReply multistatus(const std::vector<std::string>& hrefs) {
  std::string body = R"(<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">)";
  for (const auto& href : hrefs) {
    body += "<D:response><D:href>" + href + "</D:href><D:propstat><D:prop><D:resourcetype>";
    if (href.ends_with('/')) body += "<D:collection/>";
    body +=
        "</D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>"
        "</D:response>";
  }
  body += "</D:multistatus>";
  return FaultReply{
      .status = 207, .headers = {{"Content-Type", "application/xml; charset=utf-8"}}, .body = body};
}

}  // namespace instance::testing

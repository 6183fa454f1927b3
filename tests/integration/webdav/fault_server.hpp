// A scripted HTTP/1.1 responder on 127.0.0.1, for the failures real WebDAV
// servers cannot be made to produce on demand: 500 then recovery, 425 Too
// Early, bodies that are not XML, hostile hrefs, oversized bodies, a wrong
// bearer token. Everything a real server can do is tested against Apache and
// lighttpd instead; this is not a WebDAV implementation.
//
// Each connection is served on its own thread with keep-alive; the handler
// is called for each request, under a mutex (handlers need no locking).
//
// Thread safety: all public members may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace instance::testing {

struct FaultRequest {
  std::string method;
  std::string target;                          // the request path as sent
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

struct FaultReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool close = false;  // close the connection after this reply
};

class FaultServer {
 public:
  using Handler = std::function<FaultReply(const FaultRequest&)>;

  explicit FaultServer(Handler handler);
  ~FaultServer();  // stops and joins every thread
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  std::vector<FaultRequest> requests() const;

 private:
  void accept_loop();
  void serve(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<FaultRequest> requests_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A 207 reply listing `hrefs` (collections end in '/').
FaultReply multistatus(const std::vector<std::string>& hrefs);

}  // namespace instance::testing

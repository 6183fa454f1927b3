// A small HTTP/1.1 server on 127.0.0.1 for test doubles that speak HTTP: the
// WebDAV fault server and the CS3 gateway double's data endpoint. It reads
// requests with a Content-Length body (no chunked bodies, no TLS), keeps
// connections alive, and answers each request with what a handler returns.
// It knows nothing of WebDAV or CS3.
//
// Each connection is served on its own thread; the handler may be called
// from several at once, so it does its own locking.
//
// Thread safety: all public members may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace instance::testing {

struct HttpRequest {
  std::string method;
  std::string target;                          // the request path as sent
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

struct HttpReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;    // not sent in reply to HEAD; Content-Length is added
  bool close = false;  // close the connection after this reply
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(const HttpRequest&)>;

  // Listens on a free port of 127.0.0.1; throws std::runtime_error
  // ("<name>: cannot listen") when it cannot.
  HttpServer(std::string name, Handler handler);
  ~HttpServer();  // stops and joins every thread
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }

 private:
  void accept_loop();
  void serve(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;  // open_fds_, threads_
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace instance::testing

// A scripted HTTP/1.1 responder on 127.0.0.1, for the failures real WebDAV
// servers cannot be made to produce on demand: 500 then recovery, 425 Too
// Early, bodies that are not XML, hostile hrefs, oversized bodies, a wrong
// bearer token. Everything a real server can do is tested against Apache and
// lighttpd instead; this is not a WebDAV implementation.
//
// Each connection is served on its own thread with keep-alive
// (tests/support/http_server.hpp); the handler is called for each request,
// under a mutex (handlers need no locking).
//
// Thread safety: all public members may be called from any thread.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "support/http_server.hpp"

namespace instance::testing {

using FaultRequest = HttpRequest;
using FaultReply = HttpReply;

class FaultServer {
 public:
  using Handler = std::function<FaultReply(const FaultRequest&)>;

  explicit FaultServer(Handler handler);
  ~FaultServer() = default;  // the server stops first (declared last)
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  std::string url() const { return server_.url(); }
  int port() const { return server_.port(); }
  int connections() const { return server_.connections(); }
  std::vector<FaultRequest> requests() const;

 private:
  Handler handler_;
  mutable std::mutex mu_;  // requests_, and one handler call at a time
  std::vector<FaultRequest> requests_;
  HttpServer server_;
};

// A 207 reply listing `hrefs` (collections end in '/').
FaultReply multistatus(const std::vector<std::string>& hrefs);

}  // namespace instance::testing

#include "fault_server.hpp"

namespace instance::testing {

FaultServer::FaultServer(Handler handler)
    : handler_(std::move(handler)), server_("fault server", [this](const HttpRequest& request) {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
        return handler_(request);
      }) {}

std::vector<FaultRequest> FaultServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
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

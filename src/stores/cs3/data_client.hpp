// The data gateway side of the CS3 store: one HTTP GET or PUT per transfer,
// on one libcurl easy handle reused under a mutex (one keep-alive
// connection per store).
//
// Each request carries the transfer token (X-Reva-Transfer) and the access
// token (x-access-token) as headers built here; nothing here logs, and a
// DataResponse never holds a header this code sent. Redirects are not
// followed; only http and https; TLS verification on unless `insecure`.
//
// Thread safety: perform() may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <curl/curl.h>

#include "instance/error.hpp"

namespace instance::cs3 {

struct DataRequest {
  bool put = false;                 // PUT `body`, else GET
  std::string url;                  // the endpoint the gateway handed out
  std::string_view transfer_token;  // X-Reva-Transfer
  std::string_view access_token;    // x-access-token
  std::string_view body;            // PUT only; must outlive perform()
  std::size_t max_body = 0;         // reply bodies past this abort the transfer
  std::chrono::milliseconds timeout{10000};
};

struct DataResponse {
  CURLcode curl = CURLE_OK;
  std::string curl_message;  // libcurl's own words for a transport error
  long status = 0;
  std::string body;
  bool body_too_large = false;
  std::string etag;  // ETag (or OC-ETag) header, verbatim
  std::string date;  // Date header

  bool transport_ok() const noexcept { return curl == CURLE_OK; }
};

class DataClient {
 public:
  // Errc::internal when libcurl cannot make a handle.
  static Result<std::unique_ptr<DataClient>> create(std::filesystem::path ca_file, bool insecure);

  DataResponse perform(const DataRequest& request);

  // True for transport errors a retry may cure (no connection, reset, timeout).
  static bool retryable(CURLcode curl);
  // True when a failed attempt may still have reached the server.
  static bool may_have_applied(CURLcode curl);

 private:
  struct CurlDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
  };
  DataClient(std::filesystem::path ca_file, bool insecure, std::unique_ptr<CURL, CurlDeleter> h)
      : ca_file_(std::move(ca_file)), insecure_(insecure), handle_(std::move(h)) {}

  const std::filesystem::path ca_file_;
  const bool insecure_;
  std::mutex mu_;
  std::unique_ptr<CURL, CurlDeleter> handle_;
};

}  // namespace instance::cs3

// A minimal HTTP client for the etcd v3 JSON gateway: POST a JSON body to one
// endpoint over one libcurl easy handle.
//
// The handle (and so its connection cache) is reused for every request:
// requests share one keep-alive TCP connection and are serialised by a
// mutex. Only http and https; redirects are not followed; TLS verification
// is on unless `insecure`. The Authorization value is a secret: it is set
// as a header on the request and never logged or copied into a result.
//
// Thread safety: post() may be called from any thread.
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

namespace instance::etcd {

struct HttpOptions {
  std::string endpoint;  // "http(s)://host:port", no path
  std::filesystem::path ca_file;
  bool insecure = false;
  std::chrono::milliseconds connect_timeout{3000};
};

struct HttpReply {
  CURLcode curl = CURLE_OK;
  std::string curl_message;  // libcurl's description of a transport error
  long status = 0;           // 0 when no response arrived
  std::string body;
  bool body_too_large = false;

  bool transport_ok() const noexcept { return curl == CURLE_OK; }
};

class HttpClient {
 public:
  // Errc::internal when libcurl cannot make a handle.
  static Result<std::unique_ptr<HttpClient>> create(HttpOptions options);

  // POSTs `body` (JSON) to endpoint + path ("/v3/kv/range"), with
  // "Authorization: <authorization>" when that is not empty. Replies past
  // `max_body` bytes are cut off (body_too_large).
  HttpReply post(std::string_view path, std::string_view body, std::string_view authorization,
                 std::chrono::milliseconds timeout, std::size_t max_body);

 private:
  struct CurlDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
  };
  HttpClient(HttpOptions options, std::unique_ptr<CURL, CurlDeleter> handle);

  HttpOptions options_;
  std::mutex mu_;
  std::unique_ptr<CURL, CurlDeleter> handle_;
};

}  // namespace instance::etcd

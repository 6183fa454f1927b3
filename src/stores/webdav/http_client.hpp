// A small HTTP client on one libcurl easy handle.
//
// The handle (and so its connection cache) is reused for every request, so
// requests to one server share one keep-alive TCP connection. perform() is
// serialised by a mutex: one request at a time per client.
//
// Security: credentials are set as libcurl options on every request (never
// in the URL, never in a header this code builds by hand); redirects are not
// followed; only http and https are allowed; TLS peer and host verification
// are on unless `insecure`. Nothing here logs.
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
#include <vector>

#include <curl/curl.h>

#include "instance/error.hpp"

namespace instance::webdav {

struct HttpClientOptions {
  enum class Auth { none, basic, bearer } auth = Auth::none;
  std::string user;
  std::string secret;
  std::filesystem::path ca_file;
  bool insecure = false;
  std::chrono::milliseconds connect_timeout{5000};
};

struct HttpRequest {
  std::string method;                // GET, HEAD, PUT, DELETE, MKCOL, PROPFIND, LOCK, UNLOCK
  std::string url;                   // absolute http(s) URL, no user info
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // sent when has_body (must outlive perform)
  bool has_body = false;
  std::size_t max_body = 0;  // response bodies past this abort the transfer
  std::chrono::milliseconds timeout{15000};
};

struct HttpResponse {
  CURLcode curl = CURLE_OK;
  std::string curl_message;  // libcurl's own description of a transport error
  long status = 0;           // 0 when no response arrived
  std::string body;
  bool body_too_large = false;
  std::string etag;          // the ETag header, verbatim ("" when absent)
  std::string date;          // the Date header
  std::string server;        // the Server header
  std::string lock_token;    // the Lock-Token header, verbatim ("<uri>"; "" when absent)
  long new_connections = 0;  // connections libcurl opened for this request

  bool transport_ok() const noexcept { return curl == CURLE_OK; }
  bool success() const noexcept { return curl == CURLE_OK && status >= 200 && status < 300; }
};

class HttpClient {
 public:
  // Errc::internal when libcurl cannot make a handle.
  static Result<std::unique_ptr<HttpClient>> create(HttpClientOptions options);

  HttpResponse perform(const HttpRequest& request);

 private:
  struct CurlDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
  };
  struct SlistDeleter {
    void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
  };

  HttpClient(HttpClientOptions options, std::unique_ptr<CURL, CurlDeleter> handle);
  void set_common_options(const HttpRequest& request, char* error_buffer);

  HttpClientOptions options_;
  std::mutex mu_;
  std::unique_ptr<CURL, CurlDeleter> handle_;
};

}  // namespace instance::webdav

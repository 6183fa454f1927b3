#include "http.hpp"

#include <algorithm>
#include <cstdint>

namespace instance::etcd {
namespace {

// curl_global_init is not thread-safe in every libcurl: once, left to exit.
void init_libcurl_once() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

struct Capture {
  HttpReply* reply;
  std::size_t max_body;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  const std::size_t n = size * count;
  if (capture->reply->body.size() + n > capture->max_body) {
    capture->reply->body_too_large = true;
    return 0;  // stops the transfer: CURLE_WRITE_ERROR
  }
  capture->reply->body.append(data, n);
  return n;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::create(HttpOptions options) {
  init_libcurl_once();
  std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  if (!handle) return fail(Errc::internal, "libcurl could not create a handle");
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(options), std::move(handle)));
}

HttpClient::HttpClient(HttpOptions options, std::unique_ptr<CURL, CurlDeleter> handle)
    : options_(std::move(options)), handle_(std::move(handle)) {}

HttpReply HttpClient::post(std::string_view path, std::string_view body,
                           std::string_view authorization, std::chrono::milliseconds timeout,
                           std::size_t max_body) {
  HttpReply reply;
  Capture capture{&reply, max_body};
  char error_buffer[CURL_ERROR_SIZE] = {};
  const std::string url = options_.endpoint + std::string(path);

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&](const std::string& header) {
    if (curl_slist* head = curl_slist_append(headers.get(), header.c_str())) {
      (void)headers.release();
      headers.reset(head);
    }
  };
  add_header("Content-Type: application/json");
  add_header("Expect:");  // no 100-continue round trip
  if (!authorization.empty()) add_header("Authorization: " + std::string(authorization));

  std::lock_guard lock(mu_);
  CURL* h = handle_.get();
  curl_easy_reset(h);  // keeps the connection cache
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "instance-guard");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<std::int64_t>(1, timeout.count())));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, options_.insecure ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, options_.insecure ? 0L : 2L);
  if (!options_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &capture);

  reply.curl = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
  if (reply.curl != CURLE_OK) {
    reply.curl_message = error_buffer[0] != '\0' ? std::string(error_buffer)
                                                 : std::string(curl_easy_strerror(reply.curl));
  }
  // Keep no pointer to this request's buffers in the handle.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  return reply;
}

}  // namespace instance::etcd

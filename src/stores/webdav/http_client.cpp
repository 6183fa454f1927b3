#include "http_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace instance::webdav {
namespace {

// curl_global_init is not thread-safe in every libcurl; do it once. The
// matching cleanup is left to process exit (other users may share libcurl).
void init_libcurl_once() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

struct Capture {
  HttpResponse* response;
  std::size_t max_body;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  const std::size_t n = size * count;
  auto& body = capture->response->body;
  if (body.size() + n > capture->max_body) {
    capture->response->body_too_large = true;
    return 0;  // stops the transfer: CURLE_WRITE_ERROR
  }
  body.append(data, n);
  return n;
}

bool header_is(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  return std::ranges::equal(line.substr(0, name.size()), name, [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
}

std::string header_value(std::string_view line, std::size_t name_size) {
  auto value = line.substr(name_size + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.remove_suffix(1);
  }
  return std::string(value);
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* response = static_cast<Capture*>(user)->response;
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue, say)
    response->etag.clear();
    response->date.clear();
    response->server.clear();
    response->lock_token.clear();
  } else if (header_is(line, "Lock-Token")) {
    response->lock_token = header_value(line, 10);
  } else if (header_is(line, "Server")) {
    response->server = header_value(line, 6);
  } else if (header_is(line, "ETag")) {
    response->etag = header_value(line, 4);
  } else if (header_is(line, "Date")) {
    response->date = header_value(line, 4);
  }
  return n;
}

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::create(HttpClientOptions options) {
  init_libcurl_once();
  std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  if (!handle) return fail(Errc::internal, "libcurl could not create a handle");
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(options), std::move(handle)));
}

HttpClient::HttpClient(HttpClientOptions options, std::unique_ptr<CURL, CurlDeleter> handle)
    : options_(std::move(options)), handle_(std::move(handle)) {}

void HttpClient::set_common_options(const HttpRequest& request, char* error_buffer) {
  CURL* h = handle_.get();
  // curl_easy_reset keeps the connection cache: only options are cleared.
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "instance-guard");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<std::int64_t>(1, request.timeout.count())));
  if (options_.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  if (!options_.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_file.c_str());
  }
  switch (options_.auth) {
    case HttpClientOptions::Auth::none:
      break;
    case HttpClientOptions::Auth::basic:
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      curl_easy_setopt(h, CURLOPT_USERNAME, options_.user.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, options_.secret.c_str());
      break;
    case HttpClientOptions::Auth::bearer:
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
      curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, options_.secret.c_str());
      break;
  }
}

HttpResponse HttpClient::perform(const HttpRequest& request) {
  HttpResponse response;
  Capture capture{&response, request.max_body};
  char error_buffer[CURL_ERROR_SIZE] = {};

  std::lock_guard lock(mu_);
  CURL* h = handle_.get();
  set_common_options(request, error_buffer);

  if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (request.has_body) {
    // POSTFIELDS with a custom method sends the body under that method.
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  }

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&](const std::string& header) {
    // Returns the list's head (unchanged once the list exists); NULL on
    // failure, leaving the list as it was.
    if (curl_slist* head = curl_slist_append(headers.get(), header.c_str())) {
      (void)headers.release();
      headers.reset(head);
    }
  };
  for (const auto& header : request.headers) add_header(header);
  add_header("Expect:");  // no 100-continue round trip
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &capture);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &capture);

  response.curl = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &response.new_connections);
  if (response.curl != CURLE_OK) {
    response.curl_message = error_buffer[0] != '\0'
                                ? std::string(error_buffer)
                                : std::string(curl_easy_strerror(response.curl));
  }
  // Do not keep pointers to this request's buffers in the handle.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  return response;
}

}  // namespace instance::webdav

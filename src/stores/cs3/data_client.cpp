#include "data_client.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace instance::cs3 {
namespace {

void init_libcurl_once() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

struct Capture {
  DataResponse* response;
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
  if (line.starts_with("HTTP/")) {
    response->etag.clear();
    response->date.clear();
  } else if (header_is(line, "ETag")) {
    response->etag = header_value(line, 4);
  } else if (header_is(line, "OC-ETag") && response->etag.empty()) {
    response->etag = header_value(line, 7);
  } else if (header_is(line, "Date")) {
    response->date = header_value(line, 4);
  }
  return n;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};

}  // namespace

Result<std::unique_ptr<DataClient>> DataClient::create(std::filesystem::path ca_file,
                                                       bool insecure) {
  init_libcurl_once();
  std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  if (!handle) return fail(Errc::internal, "libcurl could not create a handle");
  return std::unique_ptr<DataClient>(
      new DataClient(std::move(ca_file), insecure, std::move(handle)));
}

DataResponse DataClient::perform(const DataRequest& request) {
  DataResponse response;
  Capture capture{&response, request.max_body};
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::lock_guard lock(mu_);
  CURL* h = handle_.get();
  curl_easy_reset(h);  // keeps the connection cache
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "instance-guard");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<std::int64_t>(request.timeout.count(), 5000)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<std::int64_t>(1, request.timeout.count())));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, insecure_ ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, insecure_ ? 0L : 2L);
  if (!ca_file_.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, ca_file_.c_str());
  if (request.put) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  } else {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add = [&](const std::string& header) {
    if (curl_slist* head = curl_slist_append(headers.get(), header.c_str())) {
      (void)headers.release();
      headers.reset(head);
    }
  };
  // Tokens are printable ASCII without CR/LF (checked where they arrive).
  add("X-Reva-Transfer: " + std::string(request.transfer_token));
  add("x-access-token: " + std::string(request.access_token));
  if (request.put) add("Content-Type: application/octet-stream");
  add("Expect:");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &capture);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &capture);
  response.curl = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  // Drop the header list before the lock is released: it held the tokens.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  if (response.curl != CURLE_OK) {
    response.curl_message = error_buffer[0] != '\0'
                                ? std::string(error_buffer)
                                : std::string(curl_easy_strerror(response.curl));
  }
  return response;
}

bool DataClient::retryable(CURLcode curl) {
  switch (curl) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

bool DataClient::may_have_applied(CURLcode curl) {
  return curl != CURLE_COULDNT_RESOLVE_HOST && curl != CURLE_COULDNT_CONNECT &&
         curl != CURLE_SSL_CONNECT_ERROR;
}

}  // namespace instance::cs3

#include "net/http.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <mutex>

namespace instance::net {
namespace {

// curl_global_init is not thread-safe in every libcurl: once per process;
// the matching cleanup is left to exit (other users may share libcurl).
void init_libcurl_once() {
  static std::once_flag once;
  std::call_once(once, [] { (void)curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool same_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

struct Capture {
  Response* response;
  std::size_t max_body;
  const std::function<bool(std::string_view)>* on_data;  // Request::on_data, when set
  CURL* handle;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  const std::size_t n = size * count;
  if (capture->on_data != nullptr) {
    long status = 0;
    curl_easy_getinfo(capture->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) {
      if ((*capture->on_data)(std::string_view(data, n))) return n;
      capture->response->stopped = true;
      return 0;  // stops the transfer: CURLE_WRITE_ERROR
    }
  }
  auto& body = capture->response->body;
  if (body.size() + n > capture->max_body) {
    capture->response->body_too_large = true;
    return 0;  // stops the transfer: CURLE_WRITE_ERROR
  }
  body.append(data, n);
  return n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& headers = static_cast<Capture*>(user)->response->headers;
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {  // a new answer (after 100 Continue, or a 401)
    headers.clear();
    // "HTTP/1.1 401 Unauthorized": an answer that is not 1xx is one reply.
    const auto space = line.find(' ');
    if (space != std::string_view::npos && space + 1 < line.size() && line[space + 1] != '1') {
      ++static_cast<Capture*>(user)->response->replies;
    }
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
    headers.emplace_back(std::string(line.substr(0, colon)),
                         std::string(trim(line.substr(colon + 1))));
  }
  return n;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};

}  // namespace

std::string Response::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) return value;
  }
  return {};
}

Result<void> check_tls_files(const TlsOptions& tls) {
  const std::pair<const std::filesystem::path*, std::string_view> files[] = {
      {&tls.ca_file, "the CA file"},
      {&tls.client_cert, "the client certificate"},
      {&tls.client_key, "the client key"}};
  for (const auto& [path, what] : files) {
    if (path->empty()) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec) || !std::ifstream(*path)) {
      return fail(Errc::invalid, "cannot read " + std::string(what) + " " + path->string());
    }
  }
  if (!tls.client_key.empty() && tls.client_cert.empty()) {
    return fail(Errc::invalid, "a client key was given without a client certificate");
  }
  return {};
}

Result<std::unique_ptr<Client>> Client::create(ClientOptions options) {
  init_libcurl_once();
  Handle handle(curl_easy_init());
  if (!handle) return fail(Errc::internal, "libcurl could not create a handle");
  return std::unique_ptr<Client>(new Client(std::move(options), std::move(handle)));
}

Client::Client(ClientOptions options, Handle first) : options_(std::move(options)) {
  idle_.push_back(first.get());
  handles_.push_back(std::move(first));
}

CURL* Client::take_handle() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!idle_.empty()) {
      CURL* h = idle_.back();
      idle_.pop_back();
      return h;
    }
    if (handles_.size() < options_.max_connections) {  // the first is made by create()
      if (Handle made(curl_easy_init()); made) {
        handles_.push_back(std::move(made));
        return handles_.back().get();
      }
      // libcurl could not make one more: wait for one of those there are.
    }
    given_back_.wait(lock);
  }
}

void Client::give_back(CURL* handle) {
  {
    std::lock_guard lock(mu_);
    idle_.push_back(handle);
  }
  given_back_.notify_one();
}

long Client::set_common_options(CURL* h, const Request& request, char* error_buffer) {
  // Not curl_easy_reset: it also drops the authentication state, and with it
  // a Digest server's nonce, which libcurl would otherwise reuse: every
  // request would cost a challenge round trip. Every option a request sets
  // is set again below for each request, or put back here: the method (GET
  // again: HTTPGET also ends NOBODY and POST, which POSTFIELDS sets), the
  // custom verb, the body's size.
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{-1});
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "instance-guard");
  const std::int64_t timeout = std::max<std::int64_t>(1, request.timeout.count());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(timeout, options_.connect_timeout.count())));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout));
  const TlsOptions& tls = options_.tls;
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, tls.insecure ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, tls.insecure ? 0L : 2L);
  if (!tls.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.client_cert.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.client_cert.c_str());
  if (!tls.client_key.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.client_key.c_str());
  // Never set: CURLOPT_FOLLOWLOCATION (off above) and CURLOPT_UNRESTRICTED_AUTH,
  // so credentials go to this request's host only.
  long mask = CURLAUTH_NONE;
  switch (options_.auth) {
    case ClientOptions::Auth::none:
      break;
    case ClientOptions::Auth::password: {
      const Learnt learnt = [&] {
        std::lock_guard lock(mu_);
        return learnt_;
      }();
      if (learnt == Learnt::digest) {
        mask = CURLAUTH_DIGEST;
      } else if (learnt == Learnt::basic || request.url.starts_with("https://")) {
        mask = CURLAUTH_BASIC;  // one bit: sent with the first request
      } else {
        // More than one bit: libcurl sends nothing until a 401 names the
        // server's schemes, then answers with the strongest offered.
        mask = CURLAUTH_BASIC | CURLAUTH_DIGEST;
      }
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, mask);
      curl_easy_setopt(h, CURLOPT_USERNAME, options_.user.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, options_.secret.c_str());
      break;
    }
    case ClientOptions::Auth::bearer:
      mask = CURLAUTH_BEARER;
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, mask);
      curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, options_.secret.c_str());
      break;
  }
  return mask;
}

Response Client::perform(const Request& request) {
  CURL* h = take_handle();
  struct GiveBack {
    Client* client;
    CURL* handle;
    ~GiveBack() { client->give_back(handle); }
  } const give_back{this, h};
  Response response;
  const long used = perform_once(h, request, response);
  if (options_.auth != ClientOptions::Auth::password) return response;
  long offered = CURLAUTH_NONE;  // the schemes of this transfer's last 401
  curl_easy_getinfo(h, CURLINFO_HTTPAUTH_AVAIL, &offered);
  if ((offered & CURLAUTH_DIGEST) != 0) {
    {
      std::lock_guard lock(mu_);
      learnt_ = Learnt::digest;
    }
    if (response.transport_ok() && response.status == 401 && (used & CURLAUTH_DIGEST) == 0) {
      // Basic was sent (https) and the server wants Digest: once more, with
      // Digest. A 401 changed nothing on the server.
      const int replies = response.replies;
      const long connections = response.new_connections;
      response = Response{};
      (void)perform_once(h, request, response);
      response.replies += replies;
      response.new_connections += connections;
    }
  } else if ((offered & CURLAUTH_BASIC) != 0) {
    std::lock_guard lock(mu_);
    if (learnt_ == Learnt::nothing) learnt_ = Learnt::basic;
  }
  return response;
}

long Client::perform_once(CURL* h, const Request& request, Response& response) {
  Capture capture{&response, request.max_body, request.on_data ? &request.on_data : nullptr, h};
  char error_buffer[CURL_ERROR_SIZE] = {};

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

  const long auth = set_common_options(h, request, error_buffer);
  if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{0});  // never read stdin
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (request.has_body) {
    // POSTFIELDS with a custom method sends the body under that method.
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  }
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
  // Keep no pointer to this request's buffers (nor its tokens) in the handle.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  return auth;
}

}  // namespace instance::net

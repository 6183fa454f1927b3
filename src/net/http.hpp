// The one HTTP client of the stores that speak HTTP (WebDAV, etcd's JSON
// gateway, the CS3 data gateway): a few libcurl easy handles per Client,
// one request at a time on each.
//
// Each handle (and so its connection cache) is reused for every request it
// carries. A request takes the handle used last that is idle, so requests
// made one after another share one keep-alive connection; requests made at
// once from several threads take a handle each, up to
// ClientOptions::max_connections (1 by default: one request at a time per
// client), and wait for one beyond that. libcurl is
// initialised once per process (std::call_once), never cleaned up (other
// code in the process may share it).
//
// A Response keeps the transport result (a CURLcode and libcurl's words)
// apart from the HTTP status: status is 0 when no answer arrived. Response
// bodies past Request::max_body abort the transfer (body_too_large). The
// headers of the final answer (after any 100 Continue) are captured.
//
// Security: passwords and Bearer tokens are libcurl options (never in the
// URL); headers a caller adds (tokens) live only for the request and are
// dropped from the handle before perform() returns. Redirects are never
// followed, so no credential reaches another host; only http and https; TLS
// peer and host verification are on unless `insecure`; a client certificate
// and key are sent when given. Nothing here logs.
//
// A password goes as HTTP Basic or Digest, whichever the server asks for:
//   - over https, Basic with every request from the first (no challenge
//     round trip: TLS protects it and the server is verified);
//   - over plain http, nothing until the server's first 401 names its
//     schemes (libcurl answers it within the same perform, preferring
//     Digest), then Basic with every request if Basic was all it offered;
//     so the password never crosses plain http to a server that takes
//     Digest, or to one that asks for no credentials at all;
//   - once a server offered Digest (a 401 to a Basic request included: the
//     request is sent once more, with Digest), Digest only, for good: a
//     later challenge offering only Basic is not answered.
//
// Thread safety: perform() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <curl/curl.h>

#include "instance/error.hpp"

namespace instance::net {

// TLS settings, applied to every request of a client.
struct TlsOptions {
  std::filesystem::path ca_file;      // extra CA bundle (PEM); empty: the system's
  std::filesystem::path client_cert;  // client certificate (PEM); empty: none
  std::filesystem::path client_key;   // its private key (PEM); empty: in client_cert
  bool insecure = false;              // skip peer and host verification
};

// Errc::invalid naming the first file of `tls` that cannot be read ("cannot
// read the CA file /x"), or a key without a certificate; the files are
// checked once here so a bad path is a clear error before any request.
Result<void> check_tls_files(const TlsOptions& tls);

struct ClientOptions {
  // password: `user` and `secret`, HTTP Basic or Digest (see above).
  enum class Auth { none, password, bearer } auth = Auth::none;
  std::string user;    // password
  std::string secret;  // the password or the bearer token
  TlsOptions tls;
  // Per connection attempt; a request's own timeout caps it.
  std::chrono::milliseconds connect_timeout{5000};
  // Requests carried at once (each on a handle and connection of its own,
  // made when first needed); at least 1.
  std::size_t max_connections = 1;
};

struct Request {
  std::string method = "GET";        // GET, HEAD, or any other verb (sent as given)
  std::string url;                   // absolute http(s) URL, no user info
  std::vector<std::string> headers;  // "Name: value" (may hold tokens: never logged)
  std::string_view body;             // sent when has_body (must outlive perform)
  bool has_body = false;
  std::size_t max_body = 0;                  // answer bodies past this abort the transfer
  std::chrono::milliseconds timeout{15000};  // the whole transfer
  // A streamed answer (etcd's watch): when set, each piece of a 200
  // answer's body is handed here as it arrives instead of being kept in
  // Response::body (other answers are kept, under max_body); returning
  // false ends the transfer at once (Response::stopped). A transfer that
  // ends at `timeout` is then the caller's normal end, not an error of its.
  std::function<bool(std::string_view)> on_data;
};

struct Response {
  CURLcode curl = CURLE_OK;
  std::string curl_message;  // libcurl's own description of a transport error
  long status = 0;           // 0 when no answer arrived
  std::string body;
  bool body_too_large = false;  // the body cap stopped the transfer (CURLE_WRITE_ERROR)
  bool stopped = false;         // Request::on_data ended it (CURLE_WRITE_ERROR)
  // The final answer's headers, names as sent, values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;
  long new_connections = 0;  // connections libcurl opened for this request
  // HTTP answers received (1xx aside): 2 when an authentication challenge
  // (401) came before the final answer; 0 when none arrived.
  int replies = 0;

  bool transport_ok() const noexcept { return curl == CURLE_OK; }
  bool success() const noexcept { return curl == CURLE_OK && status >= 200 && status < 300; }
  // The first header named `name` (case-insensitive), verbatim; "" when absent.
  std::string header(std::string_view name) const;
};

class Client {
 public:
  // Errc::internal when libcurl cannot make a handle.
  static Result<std::unique_ptr<Client>> create(ClientOptions options);

  Response perform(const Request& request);

 private:
  struct CurlDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
  };
  using Handle = std::unique_ptr<CURL, CurlDeleter>;
  Client(ClientOptions options, Handle first);
  // The password scheme learnt from the server's challenges (mu_).
  enum class Learnt { nothing, basic, digest };
  // An idle handle (the one used last), a new one while fewer than
  // max_connections exist, else the first to be given back.
  CURL* take_handle();
  void give_back(CURL* handle);
  // One transfer of `request` on `h` (mu_ not held); returns the CURLAUTH_*
  // mask used.
  long perform_once(CURL* h, const Request& request, Response& response);
  long set_common_options(CURL* h, const Request& request, char* error_buffer);

  const ClientOptions options_;
  std::mutex mu_;
  std::condition_variable given_back_;
  std::vector<Handle> handles_;      // mu_: every handle made
  std::vector<CURL*> idle_;          // mu_: the idle ones, the one used last at the back
  Learnt learnt_ = Learnt::nothing;  // mu_
};

}  // namespace instance::net

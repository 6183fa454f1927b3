#include "errors.hpp"

namespace instance::webdav {
namespace {

std::string_view reason(long status) {
  switch (status) {
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 423:
      return "Locked";
    case 425:
      return "Too Early";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 507:
      return "Insufficient Storage";
    default:
      return "";
  }
}

bool is_tls_failure(CURLcode curl) {
  switch (curl) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
      return true;
    default:
      return false;
  }
}

}  // namespace

Errc map_http_result(CURLcode curl, long status) {
  switch (curl) {
    case CURLE_OK:
      break;
    case CURLE_OPERATION_TIMEDOUT:
      return Errc::timeout;
    case CURLE_WRITE_ERROR:
      return Errc::malformed;  // only our body cap aborts writes
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Errc::invalid;
    case CURLE_ABORTED_BY_CALLBACK:
      return Errc::cancelled;
    case CURLE_OUT_OF_MEMORY:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_FAILED_INIT:
      return Errc::internal;
    default:
      return Errc::unavailable;  // no connection, reset, TLS, protocol errors
  }
  if (status >= 200 && status < 300) return Errc::internal;  // not a failure: a caller bug
  if (status >= 300 && status < 400) return Errc::invalid;
  switch (status) {
    case 404:
    case 410:
      return Errc::not_found;
    case 409:
    case 412:
      return Errc::conflict;
    case 423:
      return Errc::locked;
    case 401:
    case 403:
      return Errc::permission;
    case 507:
      return Errc::no_space;
    case 413:
      return Errc::invalid;
    case 425:
    case 429:
      return Errc::unavailable;
    case 501:
    case 505:
      return Errc::unsupported;
    default:
      break;
  }
  if (status >= 500) return Errc::unavailable;
  if (status >= 400) return Errc::invalid;
  return Errc::malformed;  // 1xx as final status, 0 with CURLE_OK: nonsense
}

bool is_retryable(const HttpResponse& response) {
  switch (response.curl) {
    case CURLE_OK:
      break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
  const long s = response.status;
  if (s == 425 || s == 429) return true;
  return s >= 500 && s != 501 && s != 505 && s != 507 && s != 508 && s != 511;
}

bool may_have_applied(const HttpResponse& response) {
  switch (response.curl) {
    case CURLE_OK:
      break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return false;  // nothing was sent
    default:
      return true;
  }
  return response.status == 500 || response.status == 502 || response.status == 504;
}

std::string describe_result(const HttpResponse& response) {
  if (response.curl != CURLE_OK) {
    if (response.curl == CURLE_WRITE_ERROR && response.body_too_large) {
      return "reply body exceeds the size cap";
    }
    return "no reply (" + response.curl_message + ")";
  }
  std::string text = "HTTP " + std::to_string(response.status);
  if (auto r = reason(response.status); !r.empty()) text.append(" ").append(r);
  return text;
}

Error make_error(std::string_view operation, std::string_view where, const HttpResponse& response) {
  std::string message =
      std::string(operation) + " at " + std::string(where) + ": " + describe_result(response);
  if (response.curl == CURLE_OK) {
    if (response.status == 401) {
      message +=
          "; the server refused the credentials (give them with --user and "
          "--password-file / --token-file, or INSTANCE_GUARD_USER and "
          "INSTANCE_GUARD_PASSWORD / INSTANCE_GUARD_TOKEN)";
    } else if (response.status == 403) {
      message += "; the account may not access this folder";
    } else if (response.status >= 300 && response.status < 400) {
      message += "; redirects are not followed: check the store URL (http vs https, path)";
    } else if (response.status == 507) {
      message += "; the server is out of space or over quota";
    }
  } else if (is_tls_failure(response.curl)) {
    message +=
        "; TLS verification failed: give the server's CA with --ca-file (or, only for "
        "testing, --insecure)";
  }
  return Error{map_http_result(response.curl, response.status), std::move(message)};
}

}  // namespace instance::webdav

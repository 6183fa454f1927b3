#include "net/errors.hpp"

namespace instance::net {

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

bool transport_retryable(CURLcode curl) {
  switch (curl) {
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
}

bool transport_may_have_applied(CURLcode curl) {
  switch (curl) {
    case CURLE_OK:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return false;  // nothing was sent
    default:
      return true;
  }
}

bool status_retryable(long s) {
  if (s == 425 || s == 429) return true;
  return s >= 500 && s != 501 && s != 505 && s != 507 && s != 508 && s != 511;
}

bool status_may_have_applied(long s) { return s == 500 || s == 502 || s == 504; }

Errc map_result(const Response& response) {
  switch (response.curl) {
    case CURLE_OK:
      break;
    case CURLE_OPERATION_TIMEDOUT:
      return Errc::timeout;
    case CURLE_WRITE_ERROR:
      return Errc::malformed;  // only the body cap aborts writes
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
  const long status = response.status;
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

bool is_retryable(const Response& response) {
  return response.transport_ok() ? status_retryable(response.status)
                                 : transport_retryable(response.curl);
}

bool may_have_applied(const Response& response) {
  return response.transport_ok() ? status_may_have_applied(response.status)
                                 : transport_may_have_applied(response.curl);
}

std::string describe(const Response& response) {
  if (!response.transport_ok()) {
    if (response.curl == CURLE_WRITE_ERROR && response.body_too_large) {
      return "reply body exceeds the size cap";
    }
    return "no reply (" + response.curl_message + ")";
  }
  std::string text = "HTTP " + std::to_string(response.status);
  if (auto r = reason(response.status); !r.empty()) text.append(" ").append(r);
  return text;
}

Error make_error(std::string_view context, const Response& response) {
  std::string message = std::string(context) + ": " + describe(response);
  if (response.transport_ok()) {
    if (response.status >= 300 && response.status < 400) {
      message += "; redirects are not followed: check the store URL (http vs https, path)";
    } else if (response.status == 507) {
      message += "; the server is out of space or over quota";
    }
  } else if (is_tls_failure(response.curl)) {
    message += kTlsHint;
  }
  return Error{map_result(response), std::move(message)};
}

}  // namespace instance::net

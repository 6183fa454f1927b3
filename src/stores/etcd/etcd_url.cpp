// parse_etcd_url: store URLs and credentials into EtcdStoreOptions.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/etcd.hpp"

namespace instance {
namespace {

constexpr std::string_view kPasswordAdvice =
    "give it with --password-file or INSTANCE_GUARD_PASSWORD (user with --user or "
    "INSTANCE_GUARD_USER)";

}  // namespace

Result<EtcdStoreOptions> parse_etcd_url(std::string_view url, const OpenOptions& options) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return invalid_store_url(url, "expected etcd:// or etcds://");
  std::string scheme(url.substr(0, scheme_end));
  std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "etcd" && scheme != "etcds")
    return invalid_store_url(url, "expected etcd:// or etcds://");
  std::string_view rest = url.substr(scheme_end + 3);

  auto parts = split_store_url(url, rest, kPasswordAdvice);
  if (!parts) return std::unexpected(parts.error());
  const std::string_view authority = parts->authority;
  const std::string_view path = parts->path;
  auto url_user = std::move(parts->user);
  std::string host_port(authority);
  const auto close = host_port.rfind(']');
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos || (close != std::string::npos && colon < close)) {
    host_port += ":2379";  // etcd's client port
  } else if (colon + 1 == host_port.size() ||
             !std::all_of(host_port.begin() + static_cast<std::ptrdiff_t>(colon) + 1,
                          host_port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return invalid_store_url(url, "the port must be a number");
  }

  EtcdStoreOptions out;
  out.endpoint = (scheme == "etcds" ? "https://" : "http://") + host_port;
  std::string prefix(path);
  while (prefix.ends_with('/')) prefix.pop_back();
  if (!prefix.empty()) {
    if (prefix.find('%') != std::string::npos) {
      return invalid_store_url(url, "the key prefix must be plain segments of [A-Za-z0-9._~-]");
    }
    out.prefix = std::move(prefix);
  }

  // Credentials: files win over the environment, then the URL's user.
  auto given = read_credentials(options, std::move(url_user));
  if (!given) return std::unexpected(given.error());
  auto& [user, token, password] = *given;
  if (token && password) {
    return invalid_store_url(url, "both a token and a password were given; give one");
  }
  out.user = std::move(user);
  if (token) {
    out.token = std::move(*token);
    out.user.clear();
  } else if (password) {
    if (out.user.empty()) {
      return invalid_store_url(
          url, "a password was given but no user: give --user or INSTANCE_GUARD_USER");
    }
    out.password = std::move(*password);
  } else if (!out.user.empty()) {
    return invalid_store_url(url,
                             "a user was given but no password: " + std::string(kPasswordAdvice));
  }

  copy_tls_options(options, out);
  out.logger = options.logger;
  return out;
}

}  // namespace instance

// parse_etcd_url: store URLs and credentials into EtcdStoreOptions.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <expected>
#include <fstream>
#include <string>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/etcd.hpp"

namespace instance {
namespace {

constexpr std::string_view kPasswordAdvice =
    "give it with --password-file or INSTANCE_GUARD_PASSWORD (user with --user or "
    "INSTANCE_GUARD_USER)";

// One entry of the authority's comma-separated list, host[:port] or
// [v6]:port, as "host:port" (etcd's client port 2379 when none is given);
// or why it cannot be one.
std::expected<std::string, std::string_view> endpoint_of(std::string_view entry) {
  constexpr std::string_view no_host = "no host";
  constexpr std::string_view bad_host =
      "the host must be a name or address of [A-Za-z0-9._-], or an IPv6 address in brackets";
  constexpr std::string_view bad_port = "the port must be a number from 1 to 65535";
  if (entry.empty() || entry.starts_with(':')) return std::unexpected(no_host);
  std::string_view host = entry;
  std::string_view port;
  if (entry.starts_with('[')) {
    const auto close = entry.find(']');
    if (close == std::string_view::npos || close == 1) return std::unexpected(bad_host);
    host = entry.substr(0, close + 1);
    const auto after = entry.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return std::unexpected(bad_host);
      port = after.substr(1);
      if (port.empty()) return std::unexpected(bad_port);
    }
    const auto inside = host.substr(1, host.size() - 2);
    if (!std::ranges::all_of(
            inside, [](unsigned char c) { return std::isxdigit(c) || c == ':' || c == '.'; })) {
      return std::unexpected(bad_host);
    }
  } else {
    if (const auto colon = entry.find(':'); colon != std::string_view::npos) {
      host = entry.substr(0, colon);
      port = entry.substr(colon + 1);
      if (port.empty()) return std::unexpected(bad_port);
    }
    if (!std::ranges::all_of(host, [](unsigned char c) {
          return std::isalnum(c) || c == '.' || c == '-' || c == '_';
        })) {
      return std::unexpected(bad_host);
    }
  }
  if (port.empty()) return std::string(host) + ":2379";  // etcd's client port
  if (port.size() > 5 ||
      !std::ranges::all_of(port, [](unsigned char c) { return std::isdigit(c); }))
    return std::unexpected(bad_port);
  const int number = std::stoi(std::string(port));
  if (number < 1 || number > 65535) return std::unexpected(bad_port);
  return std::string(host) + ":" + std::string(port);
}

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

  EtcdStoreOptions out;
  const std::string base = scheme == "etcds" ? "https://" : "http://";
  std::size_t from = 0;
  for (int number = 1;; ++number) {
    const auto comma = authority.find(',', from);
    const auto entry =
        authority.substr(from, comma == std::string_view::npos ? authority.npos : comma - from);
    auto host_port = endpoint_of(entry);
    if (!host_port) {
      // One endpoint: the message says what is wrong; several: which one.
      const bool several = comma != std::string_view::npos || number > 1;
      return invalid_store_url(url, several ? "endpoint " + std::to_string(number) + " (\"" +
                                                  std::string(entry) +
                                                  "\"): " + std::string(host_port.error())
                                            : std::string(host_port.error()));
    }
    std::string endpoint = base + *host_port;
    if (std::ranges::find(out.endpoints, endpoint) != out.endpoints.end()) {
      return invalid_store_url(url, "endpoint " + std::to_string(number) + " (\"" +
                                        std::string(entry) + "\") is given twice");
    }
    out.endpoints.push_back(std::move(endpoint));
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
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

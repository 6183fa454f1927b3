// parse_redis_url and describe_redis: store URLs and credentials into
// RedisStoreOptions, and back into a URL without secrets.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/redis.hpp"

namespace instance {
namespace {

constexpr std::string_view kPasswordAdvice =
    "give the password with --password-file or INSTANCE_GUARD_PASSWORD (and an ACL user with "
    "--user, INSTANCE_GUARD_USER or redis://user@host)";

// host[:port] or [v6][:port] -> host, port.
Result<std::pair<std::string, int>> parse_authority(std::string_view url,
                                                    std::string_view authority,
                                                    int default_port = 6379) {
  std::string host;
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return invalid_store_url(url, "unclosed '[' in the host");
    host = std::string(authority.substr(1, close - 1));
    const auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(':')) return invalid_store_url(url, "junk after the IPv6 address");
      port_text = rest.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalid_store_url(url, "an IPv6 address goes in brackets: redis://[::1]:6379");
    }
  }
  if (host.empty()) return invalid_store_url(url, "no host");
  for (unsigned char c : host) {
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':')) {
      return invalid_store_url(url,
                               "the host may hold only letters, digits, '.', '-', '_' (or an IPv6 "
                               "address in brackets)");
    }
  }
  int port = default_port;
  if (!port_text.empty()) {
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      return invalid_store_url(url, "the port must be a number from 1 to 65535");
    }
  }
  return std::pair{std::move(host), port};
}

// The password from the file or the environment, the user from the options,
// the environment or the URL.
Result<void> credentials(std::string_view url, std::string url_user, const OpenOptions& options,
                         RedisStoreOptions& out) {
  if (!options.token_file.empty() || credential_env(options, kTokenEnv)) {
    return invalid_store_url(url,
                             "Redis takes a password, not a token: unset INSTANCE_GUARD_TOKEN / "
                             "--token-file and " +
                                 std::string(kPasswordAdvice));
  }
  auto given = read_credentials(options, std::move(url_user));
  if (!given) return std::unexpected(given.error());
  out.password = std::move(given->password).value_or("");
  out.user = std::move(given->user);
  if (!out.user.empty() && out.password.empty()) {
    return invalid_store_url(url,
                             "a user was given but no password: " + std::string(kPasswordAdvice));
  }
  for (unsigned char c : out.user) {
    if (c <= 0x20 || c >= 0x7F)
      return invalid_store_url(url, "the user name holds spaces or control bytes");
  }
  return {};
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

Result<RedisStoreOptions> parse_redis_url(std::string_view url, const OpenOptions& options) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return invalid_store_url(url, "expected redis://host[:port]");
  const auto scheme = url.substr(0, scheme_end);
  if (equals_ignoring_case(scheme, "rediss")) {
    return invalid_store_url(url,
                             "TLS (rediss://) is not supported by this build's hiredis; reach the "
                             "server over a trusted network or a TLS tunnel, with redis://");
  }
  const bool sentinel = equals_ignoring_case(scheme, "redis+sentinel");
  if (!sentinel && !equals_ignoring_case(scheme, "redis"))
    return invalid_store_url(url, "expected redis://host[:port]");
  std::string_view rest = url.substr(scheme_end + 3);

  auto parts = split_store_url(url, rest, kPasswordAdvice, /*allow_query=*/true);
  if (!parts) return std::unexpected(parts.error());
  std::string_view query = parts->query;
  std::string_view path = parts->path;
  if (path.starts_with('/')) path.remove_prefix(1);

  RedisStoreOptions out;
  auto url_user = std::move(parts->user);
  if (sentinel) {
    std::string_view list = parts->authority;
    while (true) {
      const auto comma = list.find(',');
      auto host_port = parse_authority(url, list.substr(0, comma), 26379);
      if (!host_port) return std::unexpected(host_port.error());
      out.sentinels.push_back(std::move(*host_port));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    const auto slash = path.find('/');
    out.master_name = std::string(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (out.master_name.empty()) {
      return invalid_store_url(url,
                               "no master name: redis+sentinel://s1:26379,s2:26379/mymaster[/db]");
    }
    for (unsigned char c : out.master_name) {
      if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_')) {
        return invalid_store_url(url,
                                 "the master name may hold only letters, digits, '.', '-' and '_'");
      }
    }
    out.host = out.sentinels.front().first;
    out.port = out.sentinels.front().second;
  } else {
    auto host_port = parse_authority(url, parts->authority);
    if (!host_port) return std::unexpected(host_port.error());
    out.host = std::move(host_port->first);
    out.port = host_port->second;
  }

  while (path.ends_with('/')) path.remove_suffix(1);
  if (!path.empty()) {
    const auto [end, ec] = std::from_chars(path.data(), path.data() + path.size(), out.db);
    if (ec != std::errc{} || end != path.data() + path.size() || out.db < 0) {
      return invalid_store_url(url, sentinel ? "after the master name comes a database number "
                                               "(redis+sentinel://s1,s2/mymaster/0)"
                                             : "the path must be a database number "
                                               "(redis://host:port/0)");
    }
  }

  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (param.empty()) continue;
    const auto eq = param.find('=');
    const auto name = param.substr(0, eq);
    if (name != "prefix") {
      return invalid_store_url(url,
                               "unknown parameter \"" + std::string(name) + "\" (only prefix=...)");
    }
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1));
    if (!value) return invalid_store_url(url, "bad percent escape in prefix");
    out.prefix = std::move(*value);
  }

  if (auto creds = credentials(url, std::move(url_user), options, out); !creds) {
    return std::unexpected(creds.error());
  }
  out.logger = options.logger;
  return out;
}

std::string redis_address(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string describe_redis(const RedisStoreOptions& options) {
  const std::string prefix = percent_encode(options.prefix, "-._~:");
  const std::string tail = "/" + std::to_string(options.db) + "?prefix=" + prefix;
  if (options.sentinels.empty())
    return "redis://" + redis_address(options.host, options.port) + tail;
  std::string out = "redis+sentinel://";
  for (const auto& [host, port] : options.sentinels) {
    if (out.back() != '/') out += ',';
    out += redis_address(host, port);
  }
  return out + "/" + options.master_name + tail;
}

}  // namespace instance

// parse_zookeeper_url: store URLs and credentials into ZookeeperStoreOptions.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "instance/sdk/credentials.hpp"
#include "instance/sdk/text.hpp"
#include "instance/stores/zookeeper.hpp"

namespace instance {
namespace {

constexpr std::string_view kDigestAdvice =
    "give the digest password with --password-file or INSTANCE_GUARD_PASSWORD (and the user "
    "with --user, INSTANCE_GUARD_USER or zk://user@host)";

// One "host[:port]" of the server list, checked, with the port made explicit.
Result<std::string> server_entry(std::string_view url, std::string_view entry) {
  if (entry.empty()) return invalid_store_url(url, "an empty entry in the server list");
  std::string_view host = entry;
  std::string_view port = "2181";
  if (entry.starts_with('[')) {
    const auto close = entry.find(']');
    if (close == std::string_view::npos) return invalid_store_url(url, "unclosed '[' in a host");
    host = entry.substr(0, close + 1);
    const auto rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(':')) return invalid_store_url(url, "junk after an IPv6 address");
      port = rest.substr(1);
    }
  } else if (const auto colon = entry.find(':'); colon != std::string_view::npos) {
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
  }
  const bool host_ok = host.size() > (host.starts_with('[') ? 2u : 0u) &&
                       std::ranges::all_of(host, [](unsigned char c) {
                         return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' ||
                                c == '[' || c == ']';
                       });
  if (!host_ok) {
    return invalid_store_url(url,
                             "a host of the server list is empty or holds other than "
                             "letters, digits, '.', '-', '_' (IPv6 in brackets)");
  }
  int number = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (ec != std::errc{} || end != port.data() + port.size() || number < 1 || number > 65535) {
    return invalid_store_url(url, "a port must be a number from 1 to 65535");
  }
  return std::string(host) + ":" + std::to_string(number);
}

}  // namespace

Result<ZookeeperStoreOptions> parse_zookeeper_url(std::string_view url,
                                                  const OpenOptions& options) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos ||
      !std::ranges::equal(url.substr(0, scheme_end), std::string_view("zk"),
                          [](char a, char b) { return std::tolower(a) == b; })) {
    return invalid_store_url(url, "expected zk://host:port[,host:port...][/root/path]");
  }
  auto parts = split_store_url(url, url.substr(scheme_end + 3), kDigestAdvice);
  if (!parts) return std::unexpected(parts.error());
  std::string_view authority = parts->authority;
  std::string_view path = parts->path;

  ZookeeperStoreOptions out;
  out.servers.clear();
  while (true) {
    const auto comma = authority.find(',');
    auto entry = server_entry(url, authority.substr(0, comma));
    if (!entry) return std::unexpected(entry.error());
    if (!out.servers.empty()) out.servers += ",";
    out.servers += *entry;
    if (comma == std::string_view::npos) break;
    authority.remove_prefix(comma + 1);
  }

  while (path.ends_with('/')) path.remove_suffix(1);
  if (!path.empty()) out.root = std::string(path);

  if (!options.token_file.empty() || credential_env(options, kTokenEnv)) {
    return invalid_store_url(url, "ZooKeeper takes a digest user and password, not a token: " +
                                      std::string(kDigestAdvice));
  }
  auto given = read_credentials(options, std::move(parts->user));
  if (!given) return std::unexpected(given.error());
  out.user = std::move(given->user);
  out.password = std::move(given->password).value_or("");
  if (!out.user.empty() && out.password.empty()) {
    return invalid_store_url(url,
                             "a user was given but no password: " + std::string(kDigestAdvice));
  }
  if (out.user.empty() && !out.password.empty()) {
    return invalid_store_url(url,
                             "a password was given but no user: " + std::string(kDigestAdvice));
  }
  out.create_root = !options.read_only;
  out.logger = options.logger;
  return out;
}

}  // namespace instance

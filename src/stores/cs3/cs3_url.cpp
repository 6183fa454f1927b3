// parse_cs3_url: cs3:// store URLs and service account credentials into
// Cs3StoreOptions.
#include <algorithm>
#include <cctype>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/cs3.hpp"

namespace instance {
namespace {

Result<std::string> decode(std::string_view url, std::string_view text) {
  auto out = percent_decode(text);
  if (!out) return invalid_store_url(url, "malformed percent escape");
  if (std::ranges::any_of(*out, [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    return invalid_store_url(url, "control character in the path");
  }
  return *out;
}

bool truthy(std::string_view v) { return v == "1" || v == "true" || v == "yes"; }

}  // namespace

Result<Cs3StoreOptions> parse_cs3_url(std::string_view url, const OpenOptions& options) {
  auto getenv = [&](std::string_view name) { return credential_env(options, name); };
  Cs3StoreOptions out;
  const auto sep = url.find("://");
  if (sep == std::string_view::npos)
    return invalid_store_url(url, "expected cs3://host:port/<space-id>");
  std::string scheme(url.substr(0, sep));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "cs3" || scheme == "opencloud+cs3") {
    out.tls = false;
  } else if (scheme == "cs3s" || scheme == "opencloud+cs3s") {
    out.tls = true;
  } else {
    return invalid_store_url(
        url, "not a CS3 URL (cs3://, cs3s://, opencloud+cs3://, opencloud+cs3s://)");
  }
  std::string_view rest = url.substr(sep + 3);
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.find('#') != std::string_view::npos)
    return invalid_store_url(url, "a fragment is not allowed");
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return invalid_store_url(
        url,
        "credentials do not belong in the URL; give the service account id with "
        "--user or INSTANCE_GUARD_CS3_ID and its secret with --password-file, "
        "INSTANCE_GUARD_CS3_SECRET_FILE or INSTANCE_GUARD_CS3_SECRET");
  }
  const auto colon = authority.rfind(':');
  if (authority.empty() || colon == std::string_view::npos || colon == 0 ||
      colon + 1 == authority.size() || (authority.front() == '[' && authority.find(']') > colon)) {
    return invalid_store_url(url,
                             "the gateway needs a host and a port (cs3://host:9142/<space-id>)");
  }
  out.gateway = std::string(authority);
  if (slash == std::string_view::npos || slash + 1 >= rest.size()) {
    return invalid_store_url(url, "no space id (cs3://host:port/<space-id>[/folder])");
  }
  std::string_view path = rest.substr(slash + 1);
  while (path.ends_with('/')) path.remove_suffix(1);
  const auto space_end = path.find('/');
  auto space = decode(url, path.substr(0, space_end));
  if (!space) return std::unexpected(space.error());
  out.space_id = std::move(*space);
  if (space_end != std::string_view::npos) {
    auto folder = decode(url, path.substr(space_end + 1));
    if (!folder) return std::unexpected(folder.error());
    out.folder = std::move(*folder);
  }
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto item = query.substr(0, amp);
    const auto eq = item.find('=');
    const auto name = item.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view("1") : item.substr(eq + 1);
    if (name == "allow-user-space") {
      out.allow_user_space = truthy(value);
    } else {
      return invalid_store_url(url, "unknown query parameter \"" + std::string(name.substr(0, 40)) +
                                        "\" (known: allow-user-space)");
    }
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }

  // The service account.
  if (!options.user.empty()) {
    out.client_id = options.user;
  } else if (auto id = getenv(kCs3IdEnv)) {
    out.client_id = *id;
  } else if (auto user = getenv(kUserEnv)) {
    out.client_id = *user;
  }
  if (!options.password_file.empty()) {
    auto secret = read_secret_file(options.password_file, "service account secret");
    if (!secret) return std::unexpected(secret.error());
    out.client_secret = std::move(*secret);
  } else if (auto file = getenv(kCs3SecretFileEnv)) {
    auto secret = read_secret_file(*file, "service account secret");
    if (!secret) return std::unexpected(secret.error());
    out.client_secret = std::move(*secret);
  } else if (auto secret = getenv(kCs3SecretEnv)) {
    out.client_secret = *secret;
  } else if (auto password = getenv(kPasswordEnv)) {
    out.client_secret = *password;
  }
  if (!options.token_file.empty()) {
    return invalid_store_url(url,
                             "a CS3 store authenticates with a service account id and secret, not "
                             "a bearer token (--token-file)");
  }
  copy_tls_options(options, out);
  out.read_only = options.read_only;
  out.logger = options.logger;
  return out;
}

}  // namespace instance

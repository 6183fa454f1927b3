// parse_cs3_url: cs3:// store URLs and service account credentials into
// Cs3StoreOptions.
#include <cctype>

#include "instance/credentials.hpp"
#include "instance/stores/cs3.hpp"

namespace instance {
namespace {

// The URL for a message: user info dropped, then redact_url.
std::string shown(std::string_view url) {
  std::string out(url);
  if (const auto start = out.find("://"); start != std::string::npos) {
    const auto end = out.find('/', start + 3);
    if (const auto at = out.rfind('@', end); at != std::string::npos && at > start) {
      out.replace(start + 3, at + 1 - (start + 3), "REDACTED@");
    }
  }
  out = redact_url(out);
  for (auto& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return out;
}

std::unexpected<Error> invalid(std::string_view url, std::string why) {
  return fail(Errc::invalid, "store URL " + shown(url) + ": " + std::move(why));
}

Result<std::string> decode(std::string_view url, std::string_view text) {
  std::string out;
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F'   ? c - 'A' + 10 : -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0) {
      return invalid(url, "malformed percent escape");
    }
    const char c = static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
    if (static_cast<unsigned char>(c) < 0x20) return invalid(url, "control character in the path");
    out.push_back(c);
    i += 2;
  }
  return out;
}

bool truthy(std::string_view v) { return v == "1" || v == "true" || v == "yes"; }

}  // namespace

Result<Cs3StoreOptions> parse_cs3_url(std::string_view url, const OpenOptions& options) {
  auto getenv = [&](std::string_view name) { return credential_env(options, name); };
  Cs3StoreOptions out;
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return invalid(url, "expected cs3://host:port/<space-id>");
  std::string scheme(url.substr(0, sep));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "cs3" || scheme == "opencloud+cs3") {
    out.tls = false;
  } else if (scheme == "cs3s" || scheme == "opencloud+cs3s") {
    out.tls = true;
  } else {
    return invalid(url, "not a CS3 URL (cs3://, cs3s://, opencloud+cs3://, opencloud+cs3s://)");
  }
  std::string_view rest = url.substr(sep + 3);
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.find('#') != std::string_view::npos) return invalid(url, "a fragment is not allowed");
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return invalid(url, "credentials do not belong in the URL; give the service account id with "
                        "--user or INSTANCE_GUARD_CS3_ID and its secret with --password-file, "
                        "INSTANCE_GUARD_CS3_SECRET_FILE or INSTANCE_GUARD_CS3_SECRET");
  }
  const auto colon = authority.rfind(':');
  if (authority.empty() || colon == std::string_view::npos || colon == 0 ||
      colon + 1 == authority.size() ||
      (authority.front() == '[' && authority.find(']') > colon)) {
    return invalid(url, "the gateway needs a host and a port (cs3://host:9142/<space-id>)");
  }
  out.gateway = std::string(authority);
  if (slash == std::string_view::npos || slash + 1 >= rest.size()) {
    return invalid(url, "no space id (cs3://host:port/<space-id>[/folder])");
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
      return invalid(url, "unknown query parameter \"" + std::string(name.substr(0, 40)) +
                              "\" (known: allow-user-space)");
    }
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }

  // The service account.
  if (!options.user.empty()) {
    out.client_id = options.user;
  } else if (auto id = getenv("INSTANCE_GUARD_CS3_ID")) {
    out.client_id = *id;
  } else if (auto user = getenv("INSTANCE_GUARD_USER")) {
    out.client_id = *user;
  }
  if (!options.password_file.empty()) {
    auto secret = read_secret_file(options.password_file, "service account secret");
    if (!secret) return std::unexpected(secret.error());
    out.client_secret = std::move(*secret);
  } else if (auto file = getenv("INSTANCE_GUARD_CS3_SECRET_FILE")) {
    auto secret = read_secret_file(*file, "service account secret");
    if (!secret) return std::unexpected(secret.error());
    out.client_secret = std::move(*secret);
  } else if (auto secret = getenv("INSTANCE_GUARD_CS3_SECRET")) {
    out.client_secret = *secret;
  } else if (auto password = getenv("INSTANCE_GUARD_PASSWORD")) {
    out.client_secret = *password;
  }
  if (!options.token_file.empty()) {
    return invalid(url, "a CS3 store authenticates with a service account id and secret, not "
                        "a bearer token (--token-file)");
  }
  out.ca_file = options.ca_file;
  out.insecure = options.insecure;
  out.logger = options.logger;
  out.max_clock_skew = options.ttl / 10;
  return out;
}

}  // namespace instance

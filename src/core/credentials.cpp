// Credential files and variables shared by the stores (instance/sdk/credentials.hpp).
#include "instance/sdk/credentials.hpp"

#include "instance/logger.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace instance {

Result<std::string> read_secret_file(const std::filesystem::path& path, std::string_view what) {
  const std::string name = "the " + std::string(what) + " file " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::invalid, "cannot read " + name);
  std::string secret(kMaxSecretFileSize + 1, '\0');
  in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
  if (in.bad()) return fail(Errc::invalid, "cannot read " + name);
  secret.resize(static_cast<std::size_t>(in.gcount()));
  if (secret.size() > kMaxSecretFileSize)
    return fail(Errc::invalid, name + " is larger than 64 KiB");
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
    secret.pop_back();
  }
  if (secret.empty()) return fail(Errc::invalid, name + " is empty");
  if (secret.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    return fail(Errc::invalid, name + " holds more than one line");
  }
  return secret;
}

std::optional<std::string> credential_env(const OpenOptions& options, std::string_view name) {
  std::optional<std::string> value;
  if (options.getenv) {
    value = options.getenv(name);
  } else if (const char* v = std::getenv(std::string(name).c_str())) {
    value = std::string(v);
  }
  if (value && value->empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> credential_variables(std::string_view store_url) {
  std::vector<std::string_view> out(kCredentialEnv.begin(), kCredentialEnv.end());
  const std::string_view scheme = store_url.substr(0, store_url.find("://"));
  auto is = [&](std::string_view name) {
    return scheme.size() == name.size() &&
           std::equal(scheme.begin(), scheme.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (store_url.find("://") != std::string_view::npos && (is("postgres") || is("postgresql"))) {
    out.insert(out.end(), kPostgresCredentialEnv.begin(), kPostgresCredentialEnv.end());
  }
  return out;
}

Result<StoreCredentials> read_credentials(const OpenOptions& options, std::string url_user) {
  StoreCredentials out;
  if (!options.token_file.empty()) {
    auto token = read_secret_file(options.token_file, "token");
    if (!token) return std::unexpected(token.error());
    out.token = std::move(*token);
  }
  if (!options.password_file.empty()) {
    auto password = read_secret_file(options.password_file, "password");
    if (!password) return std::unexpected(password.error());
    out.password = std::move(*password);
  }
  if (options.token_file.empty() && options.password_file.empty()) {
    out.token = credential_env(options, kTokenEnv);
    out.password = credential_env(options, kPasswordEnv);
  }
  out.user = options.user;
  if (out.user.empty()) out.user = credential_env(options, kUserEnv).value_or("");
  if (out.user.empty()) out.user = std::move(url_user);
  return out;
}

std::optional<std::string> password_in_url(std::string_view url, std::string_view advice) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  const std::string_view rest = url.substr(scheme_end + 3);
  const auto at = rest.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const auto delimiter = rest.find_first_of("/?#");
  if (delimiter != std::string_view::npos && delimiter < at) {
    return "an '@' after the host must be escaped as %40 (a password does not belong in the "
           "URL: " +
           std::string(advice) + ")";
  }
  if (rest.substr(0, at).find(':') != std::string_view::npos) {
    return "a password in the URL is refused (it would show in ps, shell history and logs); " +
           std::string(advice);
  }
  return std::nullopt;
}

Result<std::string> take_url_user(std::string_view url, std::string_view& authority) {
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string();
  auto user = percent_decode(authority.substr(0, at));
  if (!user) return invalid_store_url(url, "bad percent escape in the user name");
  authority.remove_prefix(at + 1);
  return std::move(*user);
}

Result<StoreUrlParts> split_store_url(std::string_view url, std::string_view rest,
                                      std::string_view advice, bool allow_query) {
  if (auto why = password_in_url(url, advice)) return invalid_store_url(url, *why);
  if (std::ranges::any_of(rest, [](unsigned char c) { return c <= 0x20 || c >= 0x7F; })) {
    return invalid_store_url(url, "spaces or control characters");
  }
  StoreUrlParts parts;
  if (allow_query) {
    if (rest.find('#') != std::string_view::npos) {
      return invalid_store_url(url, "a fragment is not allowed");
    }
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
      parts.query = rest.substr(q + 1);
      rest = rest.substr(0, q);
    }
  } else if (rest.find_first_of("?#") != std::string_view::npos) {
    return invalid_store_url(url, "a query or fragment is not allowed");
  }
  const auto slash = rest.find('/');
  parts.authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) parts.path = rest.substr(slash);
  auto user = take_url_user(url, parts.authority);
  if (!user) return std::unexpected(user.error());
  parts.user = std::move(*user);
  if (parts.authority.empty() || parts.authority.starts_with(':')) {
    return invalid_store_url(url, "no host");
  }
  return parts;
}

}  // namespace instance

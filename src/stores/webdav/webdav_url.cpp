// parse_webdav_url: store URLs and credentials into WebDavStoreOptions.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/webdav.hpp"
#include "paths.hpp"

namespace instance {
namespace {

constexpr std::string_view kDefaultOpenCloudFolder = ".instance-guard";

struct Credentials {
  WebDavAuth auth = WebDavAuth::none;
  std::string user;
  std::string secret;
};

Result<Credentials> credentials(std::string_view url, std::string url_user,
                                const OpenOptions& options) {
  auto given = read_credentials(options, std::move(url_user));
  if (!given) return std::unexpected(given.error());
  auto& [user, token, password] = *given;
  if (token && password) {
    // Both from files, or (no file given) both from the environment.
    if (!options.token_file.empty()) {
      return invalid_store_url(url, "both a token file and a password file were given; give one");
    }
    return invalid_store_url(url,
                             "both INSTANCE_GUARD_TOKEN and INSTANCE_GUARD_PASSWORD are set; "
                             "unset one");
  }
  Credentials out;
  out.user = std::move(user);
  if (token) {
    out.auth = WebDavAuth::bearer;
    out.secret = std::move(*token);
    out.user.clear();
  } else if (password) {
    if (out.user.empty()) {
      return invalid_store_url(url,
                               "a password was given but no user: give --user or "
                               "INSTANCE_GUARD_USER");
    }
    out.auth = WebDavAuth::basic;
    out.secret = std::move(*password);
  } else if (!out.user.empty()) {
    return invalid_store_url(url,
                             "a user was given but no password: give --password-file or "
                             "INSTANCE_GUARD_PASSWORD (or a token with --token-file or "
                             "INSTANCE_GUARD_TOKEN)");
  }
  if (out.user.find(':') != std::string::npos) {
    return invalid_store_url(url, "a basic-auth user name cannot contain ':'");
  }
  return out;
}

}  // namespace

Result<WebDavStoreOptions> parse_webdav_url(std::string_view url, const OpenOptions& options) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return invalid_store_url(url, "expected webdav://, webdavs:// or opencloud://");
  }
  std::string scheme(url.substr(0, scheme_end));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string http_scheme;
  if (scheme == "webdav") {
    http_scheme = "http";
  } else if (scheme == "webdavs" || scheme == "opencloud") {
    http_scheme = "https";
  } else {
    return invalid_store_url(url, "expected webdav://, webdavs:// or opencloud://");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  constexpr std::string_view kPasswordAdvice =
      "give it with --password-file or INSTANCE_GUARD_PASSWORD, or a token with --token-file or "
      "INSTANCE_GUARD_TOKEN";
  auto parts = split_store_url(url, rest, kPasswordAdvice);
  if (!parts) return std::unexpected(parts.error());
  const std::string_view authority = parts->authority;
  const std::string_view path = parts->path;
  auto url_user = std::move(parts->user);

  std::string base_path;
  if (scheme == "opencloud") {
    std::vector<std::string> segments;
    std::string_view p = path;
    while (!p.empty()) {
      while (p.starts_with('/')) p.remove_prefix(1);
      const auto next = p.find('/');
      const auto seg = p.substr(0, next);
      if (!seg.empty()) {
        auto decoded = percent_decode(seg);
        if (!decoded) return invalid_store_url(url, "bad percent escape in the path");
        if (*decoded == "." || *decoded == "..")
          return invalid_store_url(url, "dot segments are not allowed");
        segments.push_back(std::move(*decoded));
      }
      p = next == std::string_view::npos ? std::string_view{} : p.substr(next);
    }
    if (segments.empty()) {
      return invalid_store_url(url, "no space id: use opencloud://host/<space-id>[/folder]");
    }
    if (segments.size() == 1) segments.emplace_back(kDefaultOpenCloudFolder);
    base_path = "/dav/spaces";
    for (const auto& s : segments) base_path.append("/").append(percent_encode(s));
  } else {
    base_path = std::string(path);
    while (base_path.ends_with('/')) base_path.pop_back();
  }

  WebDavStoreOptions out;
  out.base_url = http_scheme + "://" + std::string(authority) + base_path;
  if (auto base = webdav::parse_base_url(out.base_url); !base) {
    return invalid_store_url(url, base.error().message);
  }
  auto creds = credentials(url, std::move(url_user), options);
  if (!creds) return std::unexpected(creds.error());
  out.auth = creds->auth;
  out.user = std::move(creds->user);
  out.secret = std::move(creds->secret);
  copy_tls_options(options, out);
  out.logger = options.logger;
  out.read_only = options.read_only;
  out.create_path = options.create_path;
  return out;
}

}  // namespace instance

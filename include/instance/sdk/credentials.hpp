// For store implementations (the store SDK, include/instance/sdk/):
// credentials and TLS settings for remote stores, read the same way by every
// store's URL parser: from files named in OpenOptions or from the
// environment, never from the URL's visible text. Messages name the file or
// the variable, never the secret.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/text.hpp"

namespace instance {

// The environment variables the stores read credentials from. Every reader
// names them through these constants, and credential_variables() lists them
// for `run`, which removes them from the wrapped command's environment.
inline constexpr std::string_view kUserEnv = "INSTANCE_GUARD_USER";
inline constexpr std::string_view kPasswordEnv = "INSTANCE_GUARD_PASSWORD";
inline constexpr std::string_view kTokenEnv = "INSTANCE_GUARD_TOKEN";
inline constexpr std::string_view kCs3IdEnv = "INSTANCE_GUARD_CS3_ID";
inline constexpr std::string_view kCs3SecretEnv = "INSTANCE_GUARD_CS3_SECRET";
inline constexpr std::string_view kCs3SecretFileEnv = "INSTANCE_GUARD_CS3_SECRET_FILE";
inline constexpr std::array<std::string_view, 6> kCredentialEnv = {
    kUserEnv, kPasswordEnv, kTokenEnv, kCs3IdEnv, kCs3SecretEnv, kCs3SecretFileEnv};
// libpq's own variables, read by the PostgreSQL store's connection when no
// password was given to the guard.
inline constexpr std::array<std::string_view, 2> kPostgresCredentialEnv = {"PGPASSWORD",
                                                                           "PGPASSFILE"};

// Every variable a store at `store_url` may read credentials from:
// kCredentialEnv, and for a postgres:// or postgresql:// URL also
// kPostgresCredentialEnv. (A store URL itself never holds a secret: every
// store refuses a password in it.)
INSTANCE_EXPORT std::vector<std::string_view> credential_variables(std::string_view store_url);

// Credential files larger than this are refused.
inline constexpr std::size_t kMaxSecretFileSize = 64 * 1024;

// A password, token or secret file (`what` names it in messages: "password",
// "token", "secret"): one line, trailing whitespace (the newline editors add)
// removed. Errc::invalid when it cannot be read, is empty, larger than
// kMaxSecretFileSize, or holds more than one line (or a NUL).
INSTANCE_EXPORT Result<std::string> read_secret_file(const std::filesystem::path& path,
                                                     std::string_view what);

// The environment variable `name`, through options.getenv when set (tests),
// else the process environment; an empty value counts as unset.
INSTANCE_EXPORT std::optional<std::string> credential_env(const OpenOptions& options,
                                                          std::string_view name);

// What a store URL's options and environment give to authenticate with.
struct StoreCredentials {
  std::string user;                     // "" when none was given
  std::optional<std::string> token;     // a bearer token
  std::optional<std::string> password;  // a password (or app token used as one)
};

// The rule every store URL parser follows: files win over the environment,
// then the URL's user.
//   token, password: when options names a token file or a password file,
//     what those files hold (the token file read first; the environment is
//     not looked at then), else INSTANCE_GUARD_TOKEN and
//     INSTANCE_GUARD_PASSWORD;
//   user: options.user, else INSTANCE_GUARD_USER, else `url_user` (the
//     URL's user, from take_url_user).
// The caller decides what its store accepts (both secrets, neither, a user
// without a password). Errc::invalid when a file cannot be read
// (read_secret_file).
INSTANCE_EXPORT Result<StoreCredentials> read_credentials(const OpenOptions& options,
                                                          std::string url_user = {});

// The password-in-URL rule, the same for every store URL with user info.
// `url` is the whole store URL; check the part after "://" before anything
// else can echo it. Returns why the URL is refused (for invalid_store_url or
// the parser's own variant; it never holds the password), nullopt when the
// rule passes. Refused:
//   an '@' after the first '/', '?' or '#' ("must be escaped as %40": it
//   may be a password holding one of those), and
//   a ':' in the user info ("a password in the URL is refused").
// Both reasons end with `advice`: how to give the password instead.
INSTANCE_EXPORT std::optional<std::string> password_in_url(std::string_view url,
                                                           std::string_view advice);

// A store URL after its "scheme://" (`rest`), split the one way every store
// URL parser does. In this order: the password-in-URL rule
// (password_in_url, with `advice`); no space, control or non-ASCII byte; no
// fragment, and no query unless `allow_query`; then the authority up to the
// first '/', the user taken off it (take_url_user), and the path from that
// '/' on. Errc::invalid (invalid_store_url) naming the first rule broken, or
// an empty host.
struct StoreUrlParts {
  std::string user;            // percent-decoded; "" when none
  std::string_view authority;  // host[:port], the user taken off; never empty
  std::string_view path;       // from the first '/' on; empty when none
  std::string_view query;      // after '?' (allow_query); empty when none
};
INSTANCE_EXPORT Result<StoreUrlParts> split_store_url(std::string_view url, std::string_view rest,
                                                      std::string_view advice,
                                                      bool allow_query = false);

// Splits the user name off an authority ("user@host:port"): returns it
// percent-decoded ("" when there is none) and leaves the host part in
// `authority`. Errc::invalid for a bad escape. Apply password_in_url
// first.
INSTANCE_EXPORT Result<std::string> take_url_user(std::string_view url,
                                                  std::string_view& authority);

// Copies the TLS settings (ca_file, client_cert, client_key, insecure) from
// one set of options to another with the same four fields: OpenOptions into
// a store's options, a store's options into its client's. The one place
// that lists them.
template <class From, class To>
void copy_tls_options(const From& from, To& to) {
  to.ca_file = from.ca_file;
  to.client_cert = from.client_cert;
  to.client_key = from.client_key;
  to.insecure = from.insecure;
}

}  // namespace instance

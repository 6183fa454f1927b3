// Credentials for remote stores, read the same way by every store's URL
// parser: from files named in OpenOptions or from the environment, never from
// the URL's visible text. Messages name the file or the variable, never the
// secret.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/open_store.hpp"

namespace instance {

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

// A store URL fit for a message: redact_url (user info up to the last '@',
// sensitive query parameters), then every control or non-ASCII byte as '?'.
INSTANCE_EXPORT std::string shown_store_url(std::string_view url);

// Errc::invalid, "store URL <shown_store_url>: <why>".
INSTANCE_EXPORT std::unexpected<Error> invalid_store_url(std::string_view url, std::string why);

// %XX escapes decoded (either case); nullopt for a truncated or non-hex escape.
INSTANCE_EXPORT std::optional<std::string> percent_decode(std::string_view text);

}  // namespace instance

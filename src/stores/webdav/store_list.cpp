// The WebDAV store: listing, one PROPFIND (Depth 1) per folder.
#include <algorithm>

#include "listing.hpp"
#include "store.hpp"

namespace instance::webdav {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out.push_back('/');
    out.append(name);
  }
  return out;
}

}  // namespace

Result<std::vector<Key>> WebDavStore::list(const Key& prefix) {
  std::vector<Key> keys;
  if (auto ok = list_folder(prefix, true, 0, keys); !ok) return std::unexpected(ok.error());
  return keys;
}

Result<void> WebDavStore::list_folder(const Key& folder, bool top, std::size_t depth,
                                      std::vector<Key>& out) {
  constexpr std::string_view op = "list";
  if (depth > kMaxListingDepth) return malformed(op, folder, "folders nested too deep");
  const Sent sent = send(propfind(key_url(base_, folder, true), 1));
  const auto& r = sent.response;
  if (r.body_too_large) return malformed(op, folder, "the listing is larger than 16 MiB");
  if (r.transport_ok() && r.status == 404) {  // missing (or vanished) folder: empty
    remember_missing(folder);
    return {};
  }
  if (!r.success()) return failed(op, folder, sent);
  if (r.status != 207) {
    return malformed(op, folder, "expected 207 Multi-Status, got " + net::describe(r));
  }
  auto entries = parse_multistatus(r.body, base_.segments);
  if (!entries) return malformed(op, folder, entries.error().message);
  remember_folders(folder, true);

  const auto folder_names = folder.escaped_segments();
  std::vector<Key> subfolders;
  for (auto& entry : *entries) {
    if (entry.names == folder_names) {
      if (!entry.collection && top) out.push_back(folder);  // the prefix is a document
      continue;
    }
    if (folder.empty() && entry.names.size() == 1 && entry.names[0] == kLockFolder) {
      continue;  // the native leases' folder: locks, not documents
    }
    if (entry.names.size() != folder_names.size() + 1 ||
        !std::equal(folder_names.begin(), folder_names.end(), entry.names.begin())) {
      return malformed(op, folder,
                       "the reply names \"" + printable(join(entry.names)) +
                           "\", which is not in the listed folder");
    }
    auto key = Key::from_listing(join(entry.names));
    if (!key) return malformed(op, folder, key.error().message);
    if (entry.collection) {
      subfolders.push_back(std::move(*key));
    } else {
      out.push_back(std::move(*key));
    }
  }
  std::sort(subfolders.begin(), subfolders.end());
  subfolders.erase(std::unique(subfolders.begin(), subfolders.end()), subfolders.end());
  for (const auto& sub : subfolders) {
    if (auto ok = list_folder(sub, false, depth + 1, out); !ok) return ok;
  }
  if (top) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return {};
}

}  // namespace instance::webdav

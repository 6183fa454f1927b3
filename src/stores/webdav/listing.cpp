#include "listing.hpp"

#include <pugixml.hpp>

#include <cstring>
#include <optional>

#include "instance/key.hpp"
#include "paths.hpp"

namespace instance::webdav {
namespace {

constexpr std::string_view kDav = "DAV:";

std::string_view prefix_of(std::string_view qualified) {
  const auto colon = qualified.find(':');
  return colon == std::string_view::npos ? std::string_view{} : qualified.substr(0, colon);
}

std::string_view local_name(std::string_view qualified) {
  const auto colon = qualified.find(':');
  return colon == std::string_view::npos ? qualified : qualified.substr(colon + 1);
}

// The namespace URI bound to `prefix` at `node` ("" for the default
// namespace when none is declared).
std::string_view namespace_of(pugi::xml_node node, std::string_view prefix) {
  std::string attribute = prefix.empty() ? "xmlns" : "xmlns:" + std::string(prefix);
  for (auto n = node; n; n = n.parent()) {
    if (n.type() != pugi::node_element) continue;
    if (auto a = n.attribute(attribute.c_str())) return a.value();
  }
  return {};
}

bool is_dav(pugi::xml_node node, std::string_view local) {
  if (node.type() != pugi::node_element) return false;
  const std::string_view name = node.name();
  return local_name(name) == local && namespace_of(node, prefix_of(name)) == kDav;
}

pugi::xml_node dav_child(pugi::xml_node parent, std::string_view local) {
  for (auto child : parent.children()) {
    if (is_dav(child, local)) return child;
  }
  return {};
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

// "HTTP/1.1 200 OK" -> true
bool status_is_2xx(std::string_view status_line) {
  const auto space = status_line.find(' ');
  if (space == std::string_view::npos) return false;
  const auto code = trim(status_line.substr(space + 1));
  return code.size() >= 3 && code[0] == '2';
}

std::unexpected<Error> malformed(std::string why) {
  return fail(Errc::malformed, "malformed PROPFIND reply: " + std::move(why));
}

// The href's path as decoded segments (no empty ones).
Result<std::vector<std::string>> href_segments(std::string_view href) {
  std::string_view path = href;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (path.starts_with(scheme)) {
      path.remove_prefix(scheme.size());
      const auto slash = path.find('/');
      path = slash == std::string_view::npos ? std::string_view{"/"} : path.substr(slash);
      break;
    }
  }
  if (!path.starts_with('/')) {
    return malformed("href \"" + printable(href) + "\" is not an absolute path");
  }
  if (path.find_first_of("?#") != std::string_view::npos) {
    return malformed("href \"" + printable(href) + "\" has a query or fragment");
  }
  std::vector<std::string> segments;
  path.remove_prefix(1);
  if (path.ends_with('/')) path.remove_suffix(1);
  if (path.empty()) return segments;
  while (true) {
    const auto slash = path.find('/');
    const auto raw = path.substr(0, slash);
    if (raw.empty()) return malformed("href \"" + printable(href) + "\" has an empty segment");
    auto decoded = percent_decode(raw);
    if (!decoded) return malformed("href \"" + printable(href) + "\" has a bad percent escape");
    if (decoded->find('/') != std::string::npos) {
      return malformed("href \"" + printable(href) + "\" names an encoded '/' inside a segment");
    }
    if (*decoded == "." || *decoded == "..") {
      return malformed("href \"" + printable(href) + "\" has a dot segment");
    }
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

Result<ListingEntry> parse_response(pugi::xml_node response,
                                    const std::vector<std::string>& base_segments) {
  auto href_node = dav_child(response, "href");
  if (!href_node) return malformed("a <response> has no <href>");
  const std::string_view href = trim(href_node.child_value());
  auto segments = href_segments(href);
  if (!segments) return std::unexpected(segments.error());
  if (segments->size() < base_segments.size() ||
      !std::equal(base_segments.begin(), base_segments.end(), segments->begin())) {
    return malformed("href \"" + printable(href) + "\" is outside the store's folder");
  }
  ListingEntry entry;
  for (std::size_t i = base_segments.size(); i < segments->size(); ++i) {
    auto& name = (*segments)[i];
    // Any other name is listed, canonical or not (Key::from_listing): every
    // file under instances/ is a record to judge, as the original judges it.
    if (name.find('\0') != std::string::npos) {
      return malformed("href \"" + printable(href) + "\" names a NUL byte");
    }
    entry.names.push_back(std::move(name));
  }
  for (auto propstat : response.children()) {
    if (!is_dav(propstat, "propstat")) continue;
    auto prop = dav_child(propstat, "prop");
    if (!prop) continue;
    if (auto type = dav_child(prop, "resourcetype"); type && dav_child(type, "collection")) {
      entry.collection = true;
    }
    const bool ok = status_is_2xx(trim(dav_child(propstat, "status").child_value()));
    if (auto etag = dav_child(prop, "getetag"); etag && ok) {
      entry.etag = std::string(trim(etag.child_value()));
    }
  }
  return entry;
}

}  // namespace

Result<std::vector<ListingEntry>> parse_multistatus(std::string_view body,
                                                    const std::vector<std::string>& base_segments) {
  pugi::xml_document doc;
  const auto parsed = doc.load_buffer(body.data(), body.size(),
                                      pugi::parse_default & ~pugi::parse_pi, pugi::encoding_utf8);
  if (!parsed) {
    return malformed("not XML (" + std::string(parsed.description()) + " at byte " +
                     std::to_string(parsed.offset) + ")");
  }
  auto root = doc.document_element();
  if (!is_dav(root, "multistatus")) {
    return malformed("the root element is <" + printable(root.name()) +
                     ">, not a DAV: <multistatus>");
  }
  std::vector<ListingEntry> entries;
  for (auto response : root.children()) {
    if (!is_dav(response, "response")) continue;
    auto entry = parse_response(response, base_segments);
    if (!entry) return std::unexpected(entry.error());
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) return malformed("no <response> element, not even the folder itself");
  return entries;
}

namespace {

// Inside a lockdiscovery: a DAV: element, or one in no namespace at all.
bool is_lock_element(pugi::xml_node node, std::string_view local) {
  if (node.type() != pugi::node_element) return false;
  const std::string_view name = node.name();
  if (local_name(name) != local) return false;
  const std::string_view ns = namespace_of(node, prefix_of(name));
  return ns == kDav || ns.empty();
}

pugi::xml_node lock_child(pugi::xml_node parent, std::string_view local) {
  for (auto child : parent.children()) {
    if (is_lock_element(child, local)) return child;
  }
  return {};
}

// Every text inside `node`, in document order.
std::string text_of(pugi::xml_node node) {
  std::string out;
  for (auto n = node.first_child(); n; n = n.next_sibling()) {
    if (n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata) {
      out += n.value();
    } else if (n.type() == pugi::node_element) {
      out += text_of(n);
    }
  }
  return out;
}

}  // namespace

Result<ActiveLock> parse_lock_discovery(std::string_view body, std::string_view want_token) {
  auto bad = [](std::string why) {
    return std::unexpected(Error{Errc::malformed, "malformed lock discovery: " + std::move(why)});
  };
  pugi::xml_document doc;
  const auto parsed = doc.load_buffer(body.data(), body.size(),
                                      pugi::parse_default & ~pugi::parse_pi, pugi::encoding_utf8);
  if (!parsed) {
    return bad("not XML (" + std::string(parsed.description()) + " at byte " +
               std::to_string(parsed.offset) + ")");
  }
  auto prop = doc.document_element();
  if (is_dav(prop, "multistatus")) {
    prop = dav_child(dav_child(dav_child(prop, "response"), "propstat"), "prop");
    if (!prop) return bad("the multistatus has no <response><propstat><prop>");
  } else if (!is_dav(prop, "prop")) {
    return bad("the root element is <" + printable(prop.name()) +
               ">, not a DAV: <prop> or <multistatus>");
  }
  auto discovery = dav_child(prop, "lockdiscovery");
  if (!discovery) return bad("no <lockdiscovery>");
  bool any = false;
  for (auto active : discovery.children()) {
    if (!is_lock_element(active, "activelock")) continue;
    any = true;
    const auto href = lock_child(lock_child(active, "locktoken"), "href");
    ActiveLock lock{.token = std::string(trim(href.child_value())),
                    .timeout = std::string(trim(lock_child(active, "timeout").child_value())),
                    .owner = std::string(trim(text_of(lock_child(active, "owner"))))};
    // A lock listed without its token (sabre/dav hides them) is still a
    // lock, when any lock will do.
    if (want_token.empty() || (!lock.token.empty() && lock.token == want_token)) return lock;
  }
  if (!any) return std::unexpected(Error{Errc::not_found, "the lockdiscovery names no lock"});
  return bad(want_token.empty() ? "no <activelock> with a lock token"
                                : "no <activelock> with the granted lock token");
}

}  // namespace instance::webdav

// The session with the gateway: service account authentication, the space
// (found by id and checked), call preparation, the retry loop's helpers.

#include "store.hpp"

namespace instance::cs3 {
namespace {

// A token may travel in gRPC metadata and HTTP headers: printable ASCII only.
bool usable_token(std::string_view token) {
  if (token.empty() || token.size() > 16384) return false;
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7F) return false;
  }
  return true;
}

// "<storageid>$<spaceid>" or "<spaceid>" -> the id ListStorageSpaces takes,
// "<storageid>$<spaceid>!<spaceid>" (docs/cs3.md, "Identifiers and references").
std::string space_filter_id(std::string_view space_id) {
  const auto dollar = space_id.find('$');
  const auto space = dollar == std::string_view::npos ? space_id : space_id.substr(dollar + 1);
  return std::string(space_id) + "!" + std::string(space);
}

}  // namespace

void Cs3Store::prepare(grpc::ClientContext& context, const std::string& token) const {
  context.set_deadline(std::chrono::system_clock::now() + timeouts_.get().request_timeout);
  if (!token.empty()) context.AddMetadata("x-access-token", token);
}

std::unexpected<AttemptError> Cs3Store::transport_failure(std::string_view method,
                                                          const grpc::Status& status) {
  const auto code = status.error_code();
  std::string message = std::string(method) + ": no answer from the gateway (gRPC " +
                        std::string(grpc_code_name(code)) + ": " +
                        printable(status.error_message()) + ")";
  if (code == grpc::StatusCode::UNAVAILABLE && options_.tls) {
    message += "; with TLS, check the CA (--ca-file) and the host name";
  }
  return attempt_error(map_grpc_status(code), std::move(message), retryable_grpc(code),
                       code != grpc::StatusCode::UNAVAILABLE);
}

std::unexpected<AttemptError> Cs3Store::status_failure(std::string_view method,
                                                       const rpc::Status& status,
                                                       bool retry_locked) {
  const auto code = status.code();
  std::string message = std::string(method) + " answered " + std::string(code_name(code));
  if (!status.message().empty()) message += " (" + printable(status.message()) + ")";
  if (code == rpc::CODE_PERMISSION_DENIED) {
    message += "; the service account may not do this in the space";
  } else if (code == rpc::CODE_INSUFFICIENT_STORAGE) {
    message += "; the space is full or over quota";
  }
  const bool retry = retryable_cs3(code) || (retry_locked && code == rpc::CODE_LOCKED);
  return attempt_error(map_cs3_code(code), std::move(message), retry);
}

Attempt<Session> Cs3Store::session() {
  std::lock_guard lock(session_mu_);
  if (token_.empty()) {
    auto token = authenticate_locked();
    if (!token) return std::unexpected(std::move(token.error()));
    token_ = std::move(*token);
  }
  if (!root_) {
    auto root = find_space_locked(token_);
    if (!root) {
      // A token the gateway already refuses is dropped here too.
      if (root.error().error.code == Errc::permission) token_.clear();
      return std::unexpected(std::move(root.error()));
    }
    root_ = std::move(*root);
  }
  return Session{token_, *root_};
}

void Cs3Store::forget_token(const std::string& token) {
  std::lock_guard lock(session_mu_);
  if (token_ == token) token_.clear();
  options_.logger->debug("the gateway refused our token (expired?); authenticating again",
                         {{"store", where_}});
}

Attempt<std::string> Cs3Store::authenticate_locked() {
  gw::AuthenticateRequest request;
  request.set_type("serviceaccounts");
  request.set_client_id(options_.client_id);
  request.set_client_secret(options_.client_secret);
  gw::AuthenticateResponse response;
  grpc::ClientContext context;
  prepare(context, "");
  count_rpc();
  if (options_.stats) ++options_.stats->authentications;
  const grpc::Status status = stub_->Authenticate(&context, request, &response);
  request.clear_client_secret();
  if (!status.ok()) return transport_failure("Authenticate", status);
  const auto code = response.status().code();
  if (code != rpc::CODE_OK) {
    // The server's message is left out: it is about our credentials.
    if (code == rpc::CODE_PERMISSION_DENIED || code == rpc::CODE_UNAUTHENTICATED ||
        code == rpc::CODE_NOT_FOUND || code == rpc::CODE_INTERNAL) {
      return attempt_error(Errc::permission,
                           "the gateway refused the service account " +
                               printable(options_.client_id) + " (Authenticate answered " +
                               std::string(code_name(code)) +
                               "); check its id and secret (--user and --password-file, or "
                               "INSTANCE_GUARD_CS3_ID and INSTANCE_GUARD_CS3_SECRET_FILE)");
    }
    return status_failure("Authenticate", response.status());
  }
  if (!usable_token(response.token())) {
    return attempt_error(Errc::malformed, "Authenticate returned no usable token");
  }
  options_.logger->debug("authenticated with the gateway",
                         {{"store", where_}, {"service_account", printable(options_.client_id)}});
  return response.token();
}

Attempt<sp::ResourceId> Cs3Store::find_space_locked(const std::string& token) {
  sp::ListStorageSpacesRequest request;
  auto* filter = request.add_filters();
  filter->set_type(sp::ListStorageSpacesRequest::Filter::TYPE_ID);
  filter->mutable_id()->set_opaque_id(space_filter_id(options_.space_id));
  sp::ListStorageSpacesResponse response;
  grpc::ClientContext context;
  prepare(context, token);
  count_rpc();
  const grpc::Status status = stub_->ListStorageSpaces(&context, request, &response);
  if (!status.ok()) return transport_failure("ListStorageSpaces", status);
  if (response.status().code() != rpc::CODE_OK) {
    return status_failure("ListStorageSpaces", response.status());
  }
  if (response.storage_spaces_size() == 0) {
    return attempt_error(Errc::not_found, "no space with id " + printable(options_.space_id) +
                                              " (or the service account cannot see it)");
  }
  const auto& space = response.storage_spaces(0);
  if (!options_.allow_user_space) {
    if (auto checked = check_space_locked(token, space); !checked) {
      return std::unexpected(std::move(checked.error()));
    }
  }
  sp::ResourceId root = space.root();
  if (root.space_id().empty() && root.opaque_id().empty()) {
    const auto dollar = options_.space_id.find('$');
    root.set_storage_id(dollar == std::string::npos ? "" : options_.space_id.substr(0, dollar));
    root.set_space_id(dollar == std::string::npos ? options_.space_id
                                                  : options_.space_id.substr(dollar + 1));
    root.set_opaque_id(root.space_id());
  }
  options_.logger->debug("found the space",
                         {{"store", where_}, {"space_type", space.space_type()}});
  return root;
}

Attempt<void> Cs3Store::check_space_locked(const std::string& token,
                                           const sp::StorageSpace& space) {
  const std::string hint =
      ": end users could change or delete the guard's records. Use a space only the service "
      "account can reach, or add ?allow-user-space=1 to the store URL to accept this one";
  if (space.space_type() == "personal") {
    return attempt_error(Errc::invalid,
                         "space " + printable(options_.space_id) + " is a personal space" + hint);
  }
  sp::ListGrantsRequest request;
  *request.mutable_ref()->mutable_resource_id() = space.root();
  request.mutable_ref()->set_path(".");
  sp::ListGrantsResponse response;
  grpc::ClientContext context;
  prepare(context, token);
  count_rpc();
  const grpc::Status status = stub_->ListGrants(&context, request, &response);
  if (!status.ok()) return transport_failure("ListGrants", status);
  if (response.status().code() != rpc::CODE_OK) {
    return attempt_error(Errc::invalid,
                         "cannot tell who can reach space " + printable(options_.space_id) +
                             " (ListGrants answered " +
                             std::string(code_name(response.status().code())) + ")" + hint);
  }
  std::vector<std::string> others;
  for (const auto& grant : response.grants()) {
    const auto& grantee = grant.grantee();
    if (grantee.type() == sp::GRANTEE_TYPE_USER && grantee.has_user_id() &&
        grantee.user_id().opaque_id() == options_.client_id) {
      continue;
    }
    others.push_back(grantee.type() == sp::GRANTEE_TYPE_GROUP
                         ? std::string("a group")
                         : "user " + printable(grantee.user_id().opaque_id(), 64));
  }
  if (!others.empty()) {
    std::string names;
    for (std::size_t i = 0; i < others.size() && i < 5; ++i) {
      names += (i ? ", " : "") + others[i];
    }
    if (others.size() > 5) names += ", ...";
    return attempt_error(Errc::invalid, "space " + printable(options_.space_id) + " has " +
                                            std::to_string(others.size()) +
                                            " member(s) besides the service account (" + names +
                                            ")" + hint);
  }
  return {};
}

void Cs3Store::check_date(const std::string& date, WallTime sent_at) {
  date_check_.check(date, sent_at, *options_.clock, timeouts_, *options_.logger,
                    "the CS3 data gateway's clock differs from ours; CS3 lock expirations are "
                    "computed on our clock and judged on the server's: synchronise the clocks "
                    "(NTP)",
                    where_);
}

}  // namespace instance::cs3

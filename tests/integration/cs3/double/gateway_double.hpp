// A CS3 gateway test double: a real gRPC server speaking
// cs3.gateway.v1beta1.GatewayAPI (built from the store's own .proto subset)
// plus an HTTP data endpoint, both on 127.0.0.1, over a temporary folder.
//
// No OpenCloud server can run on the test machines, so this implements the
// semantics the store relies on (docs/cs3.md, "The gateway, as the store
// relies on it"):
//   - Authenticate (type "serviceaccounts") mints tokens; every other call
//     needs one in `x-access-token` metadata, else CODE_UNAUTHENTICATED.
//     Tokens can be made to expire (expire_tokens(), or after N calls).
//   - ListStorageSpaces by id ("<storage>$<space>!<space>"), ListGrants on
//     the space root (the service account plus configured members).
//   - Stat, ListContainer, CreateContainer (ALREADY_EXISTS, missing parent
//     FAILED_PRECONDITION), Delete (NOT_FOUND, TOO_EARLY while processing,
//     lock checks), TouchFile.
//   - InitiateFileDownload (always OK) + GET: 404, 425 while processing.
//   - InitiateFileUpload: if_not_exist -> ALREADY_EXISTS, if_match mismatch
//     or missing -> ABORTED, lock checks; then a simple PUT that re-checks
//     if_match at upload end (412) and creates exclusively when the target
//     was absent at initiate (412 when someone else created it); Content-
//     Length 0 -> 400. Every upload leaves the file "processing" (GET 425,
//     Delete CODE_TOO_EARLY) for a configurable time.
//   - SetLock (FAILED_PRECONDITION when held), GetLock, RefreshLock
//     (FAILED_PRECONDITION / ABORTED), Unlock (ABORTED / LOCKED), locks
//     expiring on the double's own clock (the real clock plus advance()).
// One mutex guards all state, so every call is atomic.
//
// Thread safety: all public members may be called from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace instance::testing {

struct GatewayDoubleOptions {
  std::string client_id = "guard-service-account";
  std::string client_secret = "sa-Secret-4711";
  std::string storage_id = "storage-users-1";
  std::string space_id = "a1b2c3d4-space";
  std::string space_type = "project";
  std::vector<std::string> members;        // user ids granted on the space besides the account
  bool group_member = false;               // a group granted on the space
  std::chrono::milliseconds too_early{0};  // "processing" time after each upload
  int token_calls = 0;                     // calls a token serves before it expires (0: unlimited)
  bool exclusive_locks = true;             // false: SetLock grants every request (a broken server)
  std::filesystem::path root;              // where files live; empty: a new temporary folder
  // Non-empty: the gRPC gateway speaks TLS with this certificate and key
  // (PEM), as behind cs3s://; the data endpoint stays plain HTTP.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Called with each data request's method before the double answers it,
  // outside its lock, from the endpoint's connection threads (a test that
  // holds requests to see them overlap).
  std::function<void(std::string_view method)> before_transfer;
};

class GatewayDouble {
 public:
  // Starts both servers on free ports. Throws std::runtime_error on failure.
  explicit GatewayDouble(GatewayDoubleOptions options = {});
  ~GatewayDouble();  // stops both servers; removes a temporary root
  GatewayDouble(const GatewayDouble&) = delete;
  GatewayDouble& operator=(const GatewayDouble&) = delete;

  int grpc_port() const;
  int http_port() const;
  int http_connections() const;  // connections the data endpoint accepted
  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port()); }
  // "<storage>$<space>", as a store URL names it.
  std::string space() const;
  const GatewayDoubleOptions& options() const;
  std::filesystem::path files() const;  // the space's folder on disk

  // Moves the double's clock (lock expiry, processing) forward.
  void advance(std::chrono::nanoseconds d);
  // Every token minted so far is refused from now on.
  void expire_tokens();
  void set_token_calls(int calls);
  void set_too_early(std::chrono::milliseconds window);
  // Stops the gRPC server (a gateway that went down); the HTTP side stays.
  void stop_grpc();

  int authentications() const;
  int unauthenticated_answers() const;  // calls refused for a bad token
  int too_early_answers() const;        // 425 and CODE_TOO_EARLY answers
  // Every access token and transfer token handed out so far.
  std::vector<std::string> tokens_issued() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace instance::testing

// announce: the original Go guard's protocol, unchanged (docs/design/modes.md,
// "announce"). Check, then write: not a lock.
//
//   acquire  list instances/; refuse at the first unreadable or live record
//            of another id; delete expired ones on the way; write ours.
//   renew    rewrite ours; a failure is logged and retried next period.
//   release  delete ours.
// Expiry is judged exactly as the original does: no skew margin, and a claim
// is never considered lost.
#include "instance/time.hpp"
#include "protocol.hpp"

namespace instance::detail {
namespace {

class Announce final : public Protocol {
 public:
  Mode mode() const noexcept override { return Mode::announce; }
  std::string_view guarantee() const noexcept override {
    return "none: announce is not a lock; two instances starting at the same moment can both run";
  }
  bool detects_loss() const noexcept override { return false; }

  std::expected<Holding, ClaimError> acquire(const Context& ctx, std::stop_token stop) override {
    const ScanRules rules{.reap = true, .margin = Duration{0}, .blind_reap = true};
    if (auto clear = scan_others(ctx, stop, rules); !clear) {
      return std::unexpected(std::move(clear.error()));
    }
    if (stop.stop_requested()) return std::unexpected(failure(Errc::cancelled, "claim cancelled"));
    Holding held{.record = our_record(ctx, ctx.clock.wall(), "")};
    if (auto written = ctx.store.replace(ctx.record_key, encode_record(held.record)); !written) {
      return std::unexpected(
          failure(written.error().code, "cannot write our record: " + written.error().message));
    }
    return held;
  }

  Renewal renew(const Context& ctx, Holding& held) override {
    if (auto renewed = renew_record(ctx, held); !renewed) return {Renewal::failed, renewed.error()};
    return {};
  }

  Result<void> release(const Context& ctx, Holding&) override { return remove_our_record(ctx); }
};

}  // namespace

std::unique_ptr<Protocol> make_announce_protocol() { return std::make_unique<Announce>(); }

}  // namespace instance::detail

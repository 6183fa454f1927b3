// guarded-service: a minimal service that keeps a second instance out by
// itself, with the instance-guard library instead of the instance-guard tool.
//
//   guarded-service STORE_URL [SECONDS]
//
// Claims STORE_URL (a folder, webdavs://..., anything open_store() takes;
// credentials from INSTANCE_GUARD_USER / _PASSWORD / _TOKEN), "works" for
// SECONDS (default 0: one unit of work), or until SIGTERM or SIGINT, then
// stands down so a successor can start at once. Exit status as the tool's:
// 0 done, 75 another instance holds the store or the claim was lost, 69 the
// store cannot be used, 78 bad URL or configuration.
#include <signal.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

#include <instance/guard.hpp>
#include <instance/open_store.hpp>

namespace {

int exit_code_for(instance::Errc code) {
  switch (code) {
    case instance::Errc::another_instance:
    case instance::Errc::locked:
      return 75;
    case instance::Errc::invalid:
    case instance::Errc::unsupported:
      return 78;
    default:
      return 69;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: guarded-service STORE_URL [SECONDS]\n");
    return 64;
  }
  int seconds = 0;
  if (argc == 3) {
    const std::string_view text = argv[2];
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || seconds < 0) {
      std::fprintf(stderr, "guarded-service: SECONDS must be a whole number >= 0, got \"%s\"\n",
                   argv[2]);
      return 64;
    }
  }
  const std::chrono::seconds work_for(seconds);

  // Block the stop signals before the guard starts its renewal threads, so
  // only the sigtimedwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto store = instance::open_store(argv[1]);
  if (!store) {
    std::fprintf(stderr, "guarded-service: %s\n", store.error().message.c_str());
    return exit_code_for(store.error().code);
  }

  std::atomic<bool> lost = false;
  instance::GuardOptions options;
  // The one ttl: Guard::create() fits the store's retries and timeouts to it.
  options.ttl = std::chrono::seconds(30);
  options.on_lost = [&lost](const instance::Error& why) {
    std::fprintf(stderr, "guarded-service: claim lost: %s\n", why.message.c_str());
    lost = true;
  };
  auto guard = instance::Guard::create(*store, options);
  if (!guard) {
    std::fprintf(stderr, "guarded-service: %s\n", guard.error().message.c_str());
    return exit_code_for(guard.error().code);
  }

  auto claim = guard->claim();
  if (!claim) {
    // error.message names the holder when another instance has the store.
    std::fprintf(stderr, "guarded-service: %s\n", claim.error().error.message.c_str());
    return exit_code_for(claim.error().error.code);
  }
  std::printf("claimed id=%s mode=%s guarantee=\"%s\"\n", claim->id().c_str(),
              std::string(instance::to_string(claim->mode())).c_str(),
              std::string(claim->guarantee()).c_str());
  std::fflush(stdout);

  // The service's work: here, waiting for a stop signal or the end of
  // SECONDS, checking every 100 ms that the claim is still ours.
  const auto until = std::chrono::steady_clock::now() + work_for;
  do {
    const timespec tick{0, 100'000'000};
    if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) break;
  } while (!lost && std::chrono::steady_clock::now() < until);

  if (lost) return 75;  // stop work at once: another instance may take over
  if (auto down = claim->stand_down(); !down) {
    std::fprintf(stderr, "guarded-service: stand down failed: %s\n", down.error().message.c_str());
    return 69;
  }
  std::printf("stood down\n");
  return 0;
}

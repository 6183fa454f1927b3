// Works only while no other instance holds the folder argv[1] (absolute).
// Links instance::core alone (the directory store is part of it).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <instance/guard.hpp>
#include <instance/stores/directory.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  auto store = instance::make_directory_store({.root = argv[1]});
  if (!store) {
    std::cerr << store.error().message << '\n';
    return 78;
  }
  instance::GuardOptions options;
  options.ttl = std::chrono::seconds(30);  // renewed every 10 s in the background
  options.on_lost = [](const instance::Error& why) {
    std::cerr << "claim lost: " << why.message << std::endl;
    std::_Exit(75);  // stop at once: another instance may take over now
  };
  auto guard = instance::Guard::create(*store, options).value();  // fails on bad options only
  auto claim = guard.claim();
  if (!claim) {  // the message names the holder when another instance runs
    std::cerr << claim.error().error.message << '\n';
    return claim.error().error.code == instance::Errc::another_instance ? 75 : 69;
  }
  std::cout << "holding: mode " << instance::to_string(claim->mode()) << ", epoch "
            << claim->epoch().value_or(0) << std::endl;

  std::string line;
  std::getline(std::cin, line);  // the service's work; here: until a line arrives

  claim->stand_down();  // removes our record, so a successor starts at once
  return 0;
}

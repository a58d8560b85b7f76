#include "common/base/program_start.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "common/base/cli.h"
#include "common/base/help.h"

namespace vfsynth {

ProgramStart StartProgram(int argc, char** argv, const std::string& usage,
                          const std::function<std::string(const std::vector<std::string>&)>& help) {
  EnsurePassiveOpenMpWait(argv);
  TuneMemoryAllocator();
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return absl::StrCat("vfsynth ", VFSYNTH_VERSION, " (", VFSYNTH_BUILD_TYPE, " build)\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  ProgramStart start;
  start.args_ = NormalizeFlagNames(argc, argv);
  if (AsksForHelp(start.args_)) {
    std::printf("%s", help(start.args_).c_str());
    start.answered_help = true;
    return start;
  }
  std::vector<char*> raw;
  for (std::string& arg : start.args_) raw.push_back(arg.data());
  start.positional = absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  return start;
}

struct StopSignals::State {
  sigset_t signals;
  std::atomic<bool> done{false};
  std::thread watcher;
};

StopSignals::StopSignals() : state_(std::make_unique<State>()) {
  sigemptyset(&state_->signals);
  sigaddset(&state_->signals, SIGINT);
  sigaddset(&state_->signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &state_->signals, nullptr);
}

void StopSignals::Watch(std::function<void(int)> on_stop) {
  state_->watcher = std::thread([state = state_.get(), on_stop = std::move(on_stop)] {
    int signal = 0;
    sigwait(&state->signals, &signal);
    if (!state->done) on_stop(signal);
  });
}

void StopSignals::Finish() {
  state_->done = true;
  if (state_->watcher.joinable()) {
    // Wakes the watcher if no signal came.
    pthread_kill(state_->watcher.native_handle(), SIGTERM);
    state_->watcher.join();
  }
}

StopSignals::~StopSignals() { Finish(); }

}  // namespace vfsynth

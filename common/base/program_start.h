#ifndef VFSYNTH_COMMON_BASE_PROGRAM_START_H_
#define VFSYNTH_COMMON_BASE_PROGRAM_START_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vfsynth {

// What every vfsynth binary does before its own work: OpenMP's passive wait (it may
// re-execute the binary), the allocator's tuning, the usage text, flag names with '-'
// normalised, `--help` answered, absl's flags parsed.
struct ProgramStart {
  bool answered_help = false;     // --help was printed: exit 0
  std::vector<char*> positional;  // argv[0] and the arguments that are not flags
 private:
  friend ProgramStart StartProgram(
      int, char**, const std::string&,
      const std::function<std::string(const std::vector<std::string>&)>&);
  std::vector<std::string> args_;  // what `positional` points into
};

// `help` gives the --help text for the normalised arguments.
ProgramStart StartProgram(int argc, char** argv, const std::string& usage,
                          const std::function<std::string(const std::vector<std::string>&)>& help);

// A daemon's stop signals (SIGINT, SIGTERM), taken by a thread of their own so that no
// gRPC call runs in a signal handler. Construct before any other thread starts (the
// signals are blocked for the threads created after), Watch once the daemon runs; the
// destructor ends the watching thread if no signal came.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Calls `on_stop` with the signal's number on the first stop signal.
  void Watch(std::function<void(int)> on_stop);
  // Once the daemon's run returned: later signals are ignored and the watcher ends.
  void Finish();

 private:
  struct State;
  const std::unique_ptr<State> state_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_PROGRAM_START_H_

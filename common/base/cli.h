#ifndef VFSYNTH_COMMON_BASE_CLI_H_
#define VFSYNTH_COMMON_BASE_CLI_H_

#include <string>
#include <vector>

namespace vfsynth {

// absl flag names cannot contain '-', but users (and docs/operations.md) write
// --noise-multiplier: rewrite "--a-b[=v]" to "--a_b[=v]" before absl parses argv.
std::vector<std::string> NormalizeFlagNames(int argc, char** argv);

// OpenMP (LibTorch, OpenBLAS) spins in barriers by default; with more runnable
// threads than cores (a curator and parties on one host, parallel tests) that made
// training ~10x slower here. libgomp reads OMP_WAIT_POLICY only at load time, so if
// it is unset this sets it to PASSIVE and re-executes the binary (returns if the
// re-exec fails). Call first thing in main().
void EnsurePassiveOpenMpWait(char** argv);

// The OpenBLAS kernel set this process runs ("Haswell", "Cooperlake", ...), or "not
// OpenBLAS" when the BLAS LibTorch loaded is another one. OpenBLAS picks it from the CPU
// unless OPENBLAS_CORETYPE pins it; the daemons log it because it moves their speed by
// a quarter (docs/performance.md).
std::string BlasCoreName();

// Whether the CPU has the AVX-512 subsets (F, DQ, BW, VL) OpenBLAS's SkylakeX kernels need.
bool CpuHasAvx512();

// A warning for the log when OPENBLAS_CORETYPE pins OpenBLAS to kernels without AVX-512
// on a CPU that has it (the VMs here pin Haswell's AVX2 kernels on AMD Zen 5; with
// OpenBLAS's own choice, Cooperlake, the benchmark grid's critic steps took 0.76x the
// time in the reference trainer and 0.83x in the distributed system, at the median), or
// "" when there is nothing to say. The pin stays: it is the operator's to lift.
std::string BlasPinWarning();

// A daemon's start-up line: its LibTorch thread count and BLAS kernels, and the warning
// above if there is one.
void LogComputeSettings(int torch_threads);

// LibTorch allocates its tensors with malloc; glibc serves large blocks by mmap and
// returns freed ones to the system, so every step's fresh [B, d] tensors page-fault
// again. On the VMs here a page fault is expensive: a B = 1024 critic step spent over
// half its time in them (per-example gradients 87 -> 7.6 ms with this setting). This
// keeps blocks up to 32 MiB in the heap and the heap from being trimmed below 512 MiB
// of free space, so memory is reused instead. Call first thing in main().
void TuneMemoryAllocator();

// Logs go to stderr (stdout stays free for command output). Sets the spdlog pattern (ISO time,
// level, logger name) and level ("info" etc.).
void InitLogging(const std::string& name, const std::string& level = "info");

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_CLI_H_

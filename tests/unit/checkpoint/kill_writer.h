#ifndef VFSYNTH_TESTS_UNIT_CHECKPOINT_KILL_WRITER_H_
#define VFSYNTH_TESTS_UNIT_CHECKPOINT_KILL_WRITER_H_

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <random>

namespace vfsynth {

// Forks a child that runs `writer`, which calls `ready()` once it is under way and
// ends with _exit. Waits for that call, sleeps a random 0..max_delay_us, kill -9s the
// child (somewhere mid-write) and reaps it. Callers check HasFatalFailure() after.
inline void KillWriterMidWay(const std::function<void(const std::function<void()>& ready)>& writer,
                             int max_delay_us, std::mt19937& random) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    writer([&] {
      const char go = 1;
      if (write(pipe_fds[1], &go, 1) != 1) _exit(3);
    });
    _exit(0);
  }
  close(pipe_fds[1]);
  char go = 0;
  ASSERT_EQ(read(pipe_fds[0], &go, 1), 1);
  close(pipe_fds[0]);
  usleep(std::uniform_int_distribution<int>(0, max_delay_us)(random));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace vfsynth

#endif  // VFSYNTH_TESTS_UNIT_CHECKPOINT_KILL_WRITER_H_

#pragma once
// How `keyshim run`s on one address share the keyshim the first of them
// started: every run holds one lock file shared while its command runs; the
// run that started the keyshim, once its own command has exited, keeps
// serving until it can take the lock exclusively (no other run holds it),
// and holds it exclusively while it drains, so that a run arriving then
// waits and finds the address free afterwards, rather than attaching to a
// keyshim about to go. An flock is released by the kernel when its holder
// exits however it exits, so a killed run never keeps another waiting.
//
// The file is $XDG_RUNTIME_DIR/keyshim/run-ADDRESS.lock, or, without
// XDG_RUNTIME_DIR, /tmp/keyshim-UID/run-ADDRESS.lock in a directory that
// must be the user's own and private.
#include "config/config.hpp"

#include <functional>
#include <optional>
#include <string>

namespace keyshim::cli {

class RunLock {
public:
  // Take the lock for `listen` shared, waiting while a keyshim started by
  // another run drains. Nothing, with `problem` set, when the lock file
  // cannot be used; nothing, with `problem` empty, when SIGINT, SIGTERM,
  // SIGHUP or SIGQUIT (blocked by the caller) came while waiting.
  static std::optional<RunLock> attach(const config::ListenAddress& listen, std::string& problem);

  // Whether a `keyshim run` serves `listen` now (holds its owner file).
  // Such a run passes SIGHUP on to its command rather than reloading.
  static bool run_serves(const config::ListenAddress& listen);

  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  // Give up the shared hold and wait until no other run holds the lock, then
  // hold it exclusively. `on_wait` is called once if that means waiting.
  // False when one of the stopping signals came first (stop serving now).
  bool wait_until_alone(const std::function<void()>& on_wait);

  // The owner file: take it (without waiting; true when this run holds it),
  // let it go, and whether another run holds it now (asked only by a run
  // that does not hold it: asking lets go of it).
  bool take_ownership();
  void give_up_ownership();
  bool owned_by_another_run();

private:
  RunLock(int fd, int owner_fd) : m_fd(fd), m_owner_fd(owner_fd) {}
  // flock(`operation` | LOCK_NB) until it succeeds or a stopping signal
  // comes; `on_wait` is called before the first wait.
  bool take(int operation, const std::function<void()>& on_wait);

  int m_fd = -1;
  int m_owner_fd = -1;
};

} // namespace keyshim::cli

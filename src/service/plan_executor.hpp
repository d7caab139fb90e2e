#pragma once
// Carries out a Plan: the file steps itself, the commands through a
// CommandRunner (the real one spawns; tests record).
#include "service/command_runner.hpp"
#include "service/service_plan.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace keyshim::service {

struct StepResult {
  bool ok = true;
  std::string error;                    // why it failed, for messages
  std::optional<CommandResult> command; // run steps only
};

struct ExecutionResult {
  bool ok = true;
  std::size_t failed_step = 0; // index of the required step that failed (when !ok)
  StepResult failure;          // what that step reported
};

// Told about each step as it happens (the CLI prints them); either may be empty.
struct StepObserver {
  std::function<void(const Action& action)> before;
  std::function<void(const Action& action, const StepResult& result)> after;
};

// Runs the steps in order and stops at the first required step that fails.
// Files are written atomically (temporary file, then rename) with the
// action's mode; directories are created with it, existing ones untouched;
// removing a file that is not there succeeds.
ExecutionResult execute_plan(const Plan& plan, const CommandRunner& runner,
                             const StepObserver& observer = {});

// One file step (make_directory, write_file, remove_file) on its own.
StepResult perform_file_action(const Action& action);

} // namespace keyshim::service

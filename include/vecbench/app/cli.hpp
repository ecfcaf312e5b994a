// The command line of the vecbench executable (src/app/cli.cpp): every subcommand's options and
// their help, parsed into the settings of the commands of commands.hpp, which it then runs.
#pragma once
#include "vecbench/app/commands.hpp"

namespace vecbench {

/// Parses `argv` (`vecbench COMMAND [OPTIONS]`) and runs the command; returns the exit status
/// (commands.hpp). `hooks` reach the commands unchanged (the vecbench executable passes none).
int run_cli(int argc, char** argv, const CommandHooks& hooks = {});

}  // namespace vecbench

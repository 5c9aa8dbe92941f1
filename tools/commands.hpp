// Subcommands of the ribbon command-line tool.
#pragma once

#include <CLI/CLI.hpp>

namespace ribbon::cli {

/// Registers `ribbon bench`; returns the function that runs it after parsing.
std::function<int()> add_bench_command(CLI::App& app);

}  // namespace ribbon::cli

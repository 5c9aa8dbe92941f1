// Subcommands of the ribbon command-line tool. Each add_*_command registers its options and
// returns the function that runs it after parsing: 0 success, 1 a negative answer (no key
// found, keys missing), exceptions for errors (main turns them into exit status 2).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ribbon::cli {

std::function<int()> add_build_command(CLI::App& app);
std::function<int()> add_query_command(CLI::App& app);
std::function<int()> add_info_command(CLI::App& app);
std::function<int()> add_verify_command(CLI::App& app);
std::function<int()> add_bench_command(CLI::App& app);
std::function<int()> add_lake_command(CLI::App& app);

}  // namespace ribbon::cli

// The ribbon command-line tool. Exit status: 0 success, 1 a check failed, 2 an error.
#include <cstdio>
#include <functional>
#include <new>

#include "commands.hpp"
#include "ribbon/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ribbon: static Ribbon filters built in bulk"};
  app.require_subcommand(1);
  const std::function<int()> bench = ribbon::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (app.got_subcommand("bench")) return bench();
  } catch (const ribbon::error& e) {
    std::fprintf(stderr, "ribbon: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ribbon: out of memory\n");
  }
  return 2;
}

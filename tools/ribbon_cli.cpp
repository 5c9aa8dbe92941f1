// The ribbon command-line tool. Exit status: 0 success, 1 a negative answer (query: no key
// positive; verify: keys missing; bench: false negatives), 2 an error.
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <system_error>

#include "commands.hpp"
#include "ribbon/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ribbon: static Ribbon filters built in bulk"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RIBBON_VERSION);
  const std::pair<const char*, std::function<int()>> commands[] = {
      {"build", ribbon::cli::add_build_command(app)},
      {"query", ribbon::cli::add_query_command(app)},
      {"info", ribbon::cli::add_info_command(app)},
      {"verify", ribbon::cli::add_verify_command(app)},
      {"bench", ribbon::cli::add_bench_command(app)},
      {"lake", ribbon::cli::add_lake_command(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const auto& [name, run] : commands) {
      if (app.got_subcommand(name)) return run();
    }
  } catch (const ribbon::error& e) {
    std::fprintf(stderr, "ribbon: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ribbon: out of memory\n");
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "ribbon: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ribbon: internal error: %s\n", e.what());
  }
  return 2;
}

# ctest wiring of the find_package consumer test; included from tests/CMakeLists.txt.
# Installs the build tree into a private prefix, then configures, builds and runs
# tests/consumer, a separate project that finds ribbon with find_package(ribbon CONFIG):
#   consumer.clean -> consumer.install (FIXTURES_SETUP) -> consumer.build_and_run
# and tests/consumer/reader, which finds only the `reader` component with oneTBB unfindable:
#   consumer.build_and_run (writes the file) -> consumer.reader_only -> consumer.reader_only_c
if(NOT RIBBON_INSTALL)
  return()
endif()

set(RIBBON_CONSUMER_PREFIX "${CMAKE_CURRENT_BINARY_DIR}/consumer-install")
set(RIBBON_CONSUMER_BUILD "${CMAKE_CURRENT_BINARY_DIR}/consumer-build")

# Start from an empty prefix so that files left by an earlier install cannot hide a missing one.
add_test(NAME consumer.clean
         COMMAND ${CMAKE_COMMAND} -E rm -rf "${RIBBON_CONSUMER_PREFIX}" "${RIBBON_CONSUMER_BUILD}")
set_tests_properties(consumer.clean PROPERTIES
                     FIXTURES_SETUP ribbon_consumer_clean LABELS consumer TIMEOUT 60)

add_test(NAME consumer.install
         COMMAND ${CMAKE_COMMAND} --install "${PROJECT_BINARY_DIR}"
                 --prefix "${RIBBON_CONSUMER_PREFIX}" --config $<CONFIG>)
set_tests_properties(consumer.install PROPERTIES
                     FIXTURES_REQUIRED ribbon_consumer_clean
                     FIXTURES_SETUP ribbon_consumer_prefix LABELS consumer TIMEOUT 120)

# The consumer is compiled and linked like the library (sanitizer runtimes).
set(RIBBON_CONSUMER_FLAGS "")
if(RIBBON_SANITIZE)
  set(RIBBON_CONSUMER_FLAGS "-fsanitize=${RIBBON_SANITIZE}")
endif()
add_test(NAME consumer.build_and_run
         COMMAND ${CMAKE_CTEST_COMMAND}
                 --build-and-test "${CMAKE_CURRENT_LIST_DIR}" "${RIBBON_CONSUMER_BUILD}"
                 --build-generator "${CMAKE_GENERATOR}"
                 --build-makeprogram "${CMAKE_MAKE_PROGRAM}"
                 --build-config $<CONFIG>
                 --build-options
                   "-DCMAKE_PREFIX_PATH=${RIBBON_CONSUMER_PREFIX}"
                   "-DCMAKE_BUILD_TYPE=$<CONFIG>"
                   "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
                   "-DCMAKE_CXX_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                   "-DCMAKE_C_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                   "-DCMAKE_EXE_LINKER_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                 --test-command ribbon_consumer "${RIBBON_CONSUMER_BUILD}/consumer.ribbon")
set_tests_properties(consumer.build_and_run PROPERTIES
                     FIXTURES_REQUIRED ribbon_consumer_prefix
                     FIXTURES_SETUP ribbon_consumer_file LABELS consumer TIMEOUT 300)

# The C ABI from C: the consumer's C program (built above against the installed
# ribbon::reader) reads the file ribbon_consumer wrote. The installed library's directory is
# on the run-time path of the build tree's executable.
add_test(NAME consumer.c_reader
         COMMAND "${RIBBON_CONSUMER_BUILD}/ribbon_c_reader" "${RIBBON_CONSUMER_BUILD}/consumer.ribbon")
set_tests_properties(consumer.c_reader PROPERTIES
                     FIXTURES_REQUIRED "ribbon_consumer_prefix;ribbon_consumer_file"
                     LABELS consumer TIMEOUT 60)

# The `reader` component alone (tests/consumer/reader): configured with find_package(TBB)
# disabled, so the component must not need oneTBB; its C++ program also fails if libtbb is
# loaded into it. It reads the file ribbon_consumer wrote, through C++ and through C.
set(RIBBON_READER_CONSUMER_BUILD "${CMAKE_CURRENT_BINARY_DIR}/consumer-reader-build")
add_test(NAME consumer.reader_only
         COMMAND ${CMAKE_CTEST_COMMAND}
                 --build-and-test "${CMAKE_CURRENT_LIST_DIR}/reader" "${RIBBON_READER_CONSUMER_BUILD}"
                 --build-generator "${CMAKE_GENERATOR}"
                 --build-makeprogram "${CMAKE_MAKE_PROGRAM}"
                 --build-config $<CONFIG>
                 --build-options
                   "-DCMAKE_PREFIX_PATH=${RIBBON_CONSUMER_PREFIX}"
                   "-DCMAKE_DISABLE_FIND_PACKAGE_TBB=ON"
                   "-DCMAKE_BUILD_TYPE=$<CONFIG>"
                   "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
                   "-DCMAKE_CXX_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                   "-DCMAKE_C_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                   "-DCMAKE_EXE_LINKER_FLAGS=${RIBBON_CONSUMER_FLAGS}"
                 --test-command ribbon_cpp_reader "${RIBBON_CONSUMER_BUILD}/consumer.ribbon")
set_tests_properties(consumer.reader_only PROPERTIES
                     FIXTURES_REQUIRED "ribbon_consumer_prefix;ribbon_consumer_file"
                     FIXTURES_SETUP ribbon_consumer_reader LABELS consumer TIMEOUT 300)
add_test(NAME consumer.reader_only_c
         COMMAND "${RIBBON_READER_CONSUMER_BUILD}/ribbon_c_reader"
                 "${RIBBON_CONSUMER_BUILD}/consumer.ribbon")
set_tests_properties(consumer.reader_only_c PROPERTIES
                     FIXTURES_REQUIRED "ribbon_consumer_file;ribbon_consumer_reader"
                     LABELS consumer TIMEOUT 60)

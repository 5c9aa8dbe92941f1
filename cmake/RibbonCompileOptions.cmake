# Warnings, sanitizers and the x86-64 level for the project's own targets.
function(ribbon_set_compile_options target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                             -Wno-sign-conversion)
    if(RIBBON_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()

if(RIBBON_X86_64_LEVEL AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=${RIBBON_X86_64_LEVEL}>)
endif()

if(RIBBON_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${RIBBON_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${RIBBON_SANITIZE})
endif()

# Fuzzers: coverage instrumentation for everything compiled (tests/fuzz links libFuzzer).
if(RIBBON_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "RIBBON_BUILD_FUZZERS needs clang (libFuzzer), e.g. "
                        "-DCMAKE_CXX_COMPILER=clang++ (Debian: clang, libclang-rt-14-dev)")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

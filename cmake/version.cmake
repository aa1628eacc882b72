# Writes generated/version.cpp with the current git commit; rewrites it only when it changed.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=10
                OUTPUT_VARIABLE MASR_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT MASR_GIT_COMMIT)
  set(MASR_GIT_COMMIT "unknown")
endif()
configure_file("${SRC}/lib/core/version.cpp.in" "${BIN}/generated/version.cpp" @ONLY)

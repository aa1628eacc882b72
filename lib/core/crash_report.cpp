// lib/core/crash_report.cpp
// Only async-signal-safe calls run inside the handler (write, backtrace_symbols_fd, signal,
// raise); backtrace() is called once at installation so that libgcc is loaded before any crash.
#include "core/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/version.h"

namespace masr {
namespace {

char g_header[256];
size_t g_header_length = 0;

void write_text(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void on_fatal_signal(int signo) {
  write_text("\nmamba-asr: fatal signal ");
  write_text(signo == SIGSEGV   ? "SIGSEGV (invalid memory access)"
             : signo == SIGBUS  ? "SIGBUS"
             : signo == SIGFPE  ? "SIGFPE (arithmetic error)"
             : signo == SIGILL  ? "SIGILL (illegal instruction)"
             : signo == SIGABRT ? "SIGABRT (aborted)"
                                : "(unknown)");
  ssize_t ignored = ::write(STDERR_FILENO, g_header, g_header_length);
  (void)ignored;
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  // The handler was installed with SA_RESETHAND: raising again runs the default action.
  raise(signo);
}

}  // namespace

void install_crash_reporter() {
  static bool installed = false;
#if defined(__SANITIZE_ADDRESS__)
  installed = true;  // AddressSanitizer's own report on SIGSEGV is better than ours
#endif
  if (installed) return;
  installed = true;
  const std::string header = std::string("\nThis is a bug in mamba-asr ") + version_string() +
                             " (commit " + git_commit() +
                             ") or a library it uses; please report it with this backtrace:\n";
  std::strncpy(g_header, header.c_str(), sizeof(g_header) - 1);
  g_header_length = std::strlen(g_header);
  void* warm[1];
  backtrace(warm, 1);
  // A separate stack so that a stack overflow can still be reported.
  static std::vector<char> alt_stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(signo, &action, nullptr);
}

}  // namespace masr

// lib/core/crash_report.h
// A last-resort report for fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): a line saying
// which signal, the version, and a symbolic backtrace on stderr, then the default action (a core
// dump where enabled). It makes a crash in LibTorch or a CUDA driver reportable from a user's log.
#pragma once

namespace masr {

// Installs the handlers once; later calls do nothing. Safe to call before anything else.
void install_crash_reporter();

}  // namespace masr

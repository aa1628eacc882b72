// apps/mamba-asr/commands.h
// The subcommands of `mamba-asr`. Each file adds its subcommand to the CLI11 app and returns the
// function that runs it once the command line has been parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/precision.h"

namespace masr::cli {

struct GlobalOptions {
  int verbose = 0;     // -v (repeatable)
  bool quiet = false;  // -q
  std::string device_text = "auto";  // --device as given; main parses it into `device`
  runtime::DeviceChoice device;      // `auto` is resolved by each command
  int threads = 0;            // 0: LibTorch's default
  bool threads_auto = false;  // --threads auto: the command takes them from its plan or profile
};

using Runner = std::function<int()>;

Runner add_train_command(CLI::App& app, GlobalOptions& global);
Runner add_decode_command(CLI::App& app, GlobalOptions& global);
Runner add_stream_command(CLI::App& app, GlobalOptions& global);
Runner add_bench_command(CLI::App& app, GlobalOptions& global);
Runner add_detect_command(CLI::App& app, GlobalOptions& global);
Runner add_features_command(CLI::App& app, GlobalOptions& global);
Runner add_prepare_command(CLI::App& app, GlobalOptions& global);
Runner add_ngram_command(CLI::App& app, GlobalOptions& global);
Runner add_import_command(CLI::App& app, GlobalOptions& global);
Runner add_convert_command(CLI::App& app, GlobalOptions& global);

// -v, -q, --device, --threads. On the root app; `train` repeats them because its unknown options
// are hparams overrides rather than falling through to the root.
void add_global_options(CLI::App& app, GlobalOptions& global);

// help.cpp: the help pages' layout (usage first, one line per option, global options in every
// subcommand's page); `mamba-asr help [SUBCOMMAND]` rewritten as `--help` (an error message for
// an unknown subcommand, else ""); the message for unknown arguments, with "did you mean"
// (`what`: CLI11's message).
std::shared_ptr<CLI::FormatterBase> make_help_formatter();
std::string rewrite_help_command(const CLI::App& app, std::vector<std::string>& args);
std::string unknown_arguments_message(const CLI::App& app, const std::string& what);

// A precision option of `cmd` (--precision, or `name`) that accepts the names of `allowed` and
// stores the parsed value.
CLI::Option* add_precision_option(CLI::App* cmd, runtime::Precision& precision,
                                  const std::vector<runtime::Precision>& allowed,
                                  const std::string& description,
                                  const std::string& name = "--precision");

}  // namespace masr::cli

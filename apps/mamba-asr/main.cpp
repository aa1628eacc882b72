// apps/mamba-asr/main.cpp
// The `mamba-asr` binary: global options, subcommand dispatch, and the one place where errors
// are caught, printed and turned into exit codes (docs/cli.md lists them).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "core/crash_report.h"
#include "core/error.h"
#include "core/log.h"
#include "core/version.h"
#include "runtime/device.h"
#include "runtime/machine.h"
#include "toolkit/registration.h"

namespace {

std::string version_text() {
  const auto info = masr::runtime::build_info();
  std::string out =
      std::string("mamba-asr ") + masr::version_string() + " (commit " + masr::git_commit() + ")\n";
  out += "LibTorch " + info.torch_version + "\n";
  out += std::string("CUDA: ") +
         (info.cuda_available ? "available, " + std::to_string(info.cuda_devices) + " device(s)"
                              : "not available") +
         (info.cuda_compiled ? " (CUDA build)" : " (CPU build)") + "\n";
  out += std::string("MPS: ") + (info.mps_available ? "available" : "not available") + "\n";
  return out;
}

// The usage line of the (sub)command a parse error belongs to, so the user sees what is expected.
void print_usage(CLI::App& app) {
  CLI::App* target = &app;
  while (!target->get_subcommands().empty()) target = target->get_subcommands().front();
  const std::string help = target->help();
  const size_t usage = help.find("Usage:");
  if (usage != std::string::npos) {
    std::string line = help.substr(usage, help.find('\n', usage) - usage);
    if (target != &app) line.replace(0, 7, "Usage: mamba-asr ");
    std::cerr << line << "\n";
  }
  std::cerr << "Run '" << (target == &app ? "mamba-asr" : "mamba-asr " + target->get_name())
            << " --help' for more.\n";
}

int run(int argc, char** argv) {
  CLI::App app{
      "Speech recognition with ConMamba, Conformer and Transformer models: train from\n"
      "SpeechBrain-style hparams files, decode audio, benchmark and tune to the machine.\n\n"
      "Examples:\n"
      "  mamba-asr decode -m models/conmamba-ctc-synth-en audio.wav\n"
      "  mamba-asr train hparams/CTC/conmamba_tiny.yaml --data_folder data --dry-run",
      "mamba-asr"};
  app.formatter(masr::cli::make_help_formatter());  // subcommands inherit it
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  masr::cli::GlobalOptions global;
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version, git commit, LibTorch and devices");
  masr::cli::add_global_options(app, global);
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options are accepted after the subcommand name too

  std::vector<std::pair<CLI::App*, masr::cli::Runner>> commands;
  auto add = [&](masr::cli::Runner (*adder)(CLI::App&, masr::cli::GlobalOptions&)) {
    const size_t before = app.get_subcommands({}).size();
    masr::cli::Runner runner = adder(app, global);
    commands.emplace_back(app.get_subcommands({})[before], std::move(runner));
  };
  add(masr::cli::add_train_command);
  add(masr::cli::add_decode_command);
  add(masr::cli::add_stream_command);
  add(masr::cli::add_bench_command);
  add(masr::cli::add_detect_command);
  add(masr::cli::add_features_command);
  add(masr::cli::add_prepare_command);
  add(masr::cli::add_ngram_command);
  add(masr::cli::add_import_command);
  add(masr::cli::add_convert_command);

  std::vector<std::string> args(argv, argv + argc);
  if (const std::string error = masr::cli::rewrite_help_command(app, args); !error.empty()) {
    std::cerr << "error: " << error << "\nRun 'mamba-asr --help' for the subcommands.\n";
    return static_cast<int>(masr::ExitCode::kUsage);
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 pops from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::cerr << "error: " << masr::cli::unknown_arguments_message(app, e.what()) << "\n";
    print_usage(app);
    return static_cast<int>(masr::ExitCode::kUsage);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    print_usage(app);
    return static_cast<int>(masr::ExitCode::kUsage);
  }

  if (show_version) {
    std::cout << version_text();
    return 0;
  }
  masr::set_log_level(global.quiet         ? masr::LogLevel::kWarn
                      : global.verbose > 0 ? masr::LogLevel::kDebug
                                           : masr::LogLevel::kInfo);
  masr::runtime::apply_threads(global.threads);
  masr::runtime::warn_if_reference_blas();
  global.device = masr::runtime::parse_device(global.device_text);  // a malformed one stops here

  for (auto& [sub, runner] : commands) {
    if (sub->parsed()) return runner();
  }
  std::cerr << app.help();
  return static_cast<int>(masr::ExitCode::kUsage);
}

// LibTorch's OpenMP threads (libgomp) spin between parallel regions before they sleep; on a
// loaded machine a spinning thread takes the core another one needs, and 2 threads decoded 3-4x
// slower than 1 (docs/runtime.md). Passive waiting removes that. libgomp reads OMP_WAIT_POLICY
// once, when it is loaded, before main runs, so the default is set from the executable's
// preinit array, which runs before any shared library's initializers. A policy in the
// environment is kept.
void prefer_passive_openmp_waiting(int, char**, char**) {
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
}
__attribute__((section(".preinit_array"), used)) void (*const kPreinit)(int, char**, char**) =
    prefer_passive_openmp_waiting;

}  // namespace

namespace masr::cli {

void add_global_options(CLI::App& app, GlobalOptions& global) {
  app.add_flag("-v,--verbose", global.verbose, "More messages (repeat for debug output)");
  app.add_flag("-q,--quiet", global.quiet, "Only warnings and errors");
  app.add_option("--device", global.device_text, "Where to compute: auto, cpu, cuda, cuda:N or mps")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--threads",
         [&global](const std::string& value) {
           global.threads_auto = value == "auto";
           if (global.threads_auto) return;
           try {
             size_t used = 0;
             global.threads = std::stoi(value, &used);
             if (used == value.size()) return;
           } catch (const std::exception&) {
           }
           throw CLI::ValidationError("--threads", "'" + value + "' is not a number or auto");
         },
         "CPU threads for LibTorch: N, 0 (its default) or auto (train/decode: the cached plan's, "
         "else the detect profile's)")
      ->type_name("N|auto");
}

CLI::Option* add_precision_option(CLI::App* cmd, runtime::Precision& precision,
                                  const std::vector<runtime::Precision>& allowed,
                                  const std::string& description, const std::string& name) {
  std::vector<std::string> names;
  for (runtime::Precision p : allowed) names.emplace_back(runtime::precision_name(p));
  // The check runs before the callback, so the callback only sees one of `names`.
  return cmd
      ->add_option_function<std::string>(
          name,
          [&precision, allowed, name](const std::string& text) {
            precision = runtime::parse_precision(text, name, allowed);
          },
          description)
      ->default_str(runtime::precision_name(precision))
      ->check(CLI::IsMember(names));
}

}  // namespace masr::cli

int main(int argc, char** argv) {
  masr::install_crash_reporter();
  try {
    masr::toolkit::register_all();
    return run(argc, argv);
  } catch (const masr::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(e.exit_code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return static_cast<int>(masr::ExitCode::kFailure);
  } catch (const std::exception& e) {
    // LibTorch (c10::Error) and the standard library report through std::exception.
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(masr::ExitCode::kFailure);
  }
}

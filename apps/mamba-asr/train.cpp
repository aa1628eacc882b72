// apps/mamba-asr/train.cpp
// `mamba-asr train HPARAMS [--key value ...]`: trains what an hparams file describes.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "hparams/hparams.h"
#include "runtime/cpu_affinity.h"
#include "runtime/device.h"
#include "runtime/kineto_trace.h"
#include "toolkit/auto_settings.h"
#include "train/c10d_data_parallel.h"
#include "train/local_launcher.h"
#include "train/train_loop.h"

namespace masr::cli {
namespace {

struct TrainOptions {
  std::string hparams_file;
  std::string overrides_yaml;
  bool dry_run = false;
  bool list_classes = false;
  bool average_only = false;
  int64_t ckpt_every_steps = -1;
  double ckpt_every_minutes = -1.0;
  int nproc = 0;
  bool nproc_given = false;
  int64_t profile_steps = 0;
  int64_t profile_from = 0;
  std::string trace;
  bool activation_checkpointing = false;
  bool speechbrain_batch_order = false;
  bool strict = false;
  std::string init_model;
};

// SIGINT/SIGTERM ask the trainer to write a checkpoint and stop at the next optimizer step; a
// second signal kills at once (the newest checkpoint is still there).
volatile std::sig_atomic_t g_stop_signals = 0;

void on_stop_signal(int signal) {
  if (++g_stop_signals >= 2) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

void print_summary(const hparams::Hparams& hp) {
  size_t built = 0;
  for (const auto& object : hp.objects()) built += object.instance->object ? 1 : 0;
  std::cerr << "Resolved " << hp.source() << ": " << hp.root().entries().size() << " keys, "
            << hp.objects().size() << " objects (" << built << " built, "
            << hp.objects().size() - built << " declared).\n";
  for (const auto& object : hp.objects()) {
    const auto& built_object = object.instance->object;
    const std::string detail = built_object ? built_object->summary() : "";
    std::cerr << "  " << object.key << ": " << object.instance->info->name << " ["
              << (built_object ? "built" : "declared") << "]"
              << (detail.empty() ? "" : "  " + detail) << "\n";
  }
  std::cerr << "(declared: arguments checked against the class's signature; the object is "
               "constructed by the subsystem that uses it)\n";
}

// The file's keys that nothing reads (hparams::Hparams::unread_keys): a warning from the
// speaking rank, or with --strict an error on every rank, before any data is touched.
// Keys set to null ask for nothing and are left out; the keys SpeechBrain's scripts read outside
// training (train::keys_outside_training) are named apart, in a dry run only.
void check_unread_keys(const hparams::Hparams& hp, bool strict, bool speak, bool dry_run) {
  const std::vector<std::string>& outside = train::keys_outside_training();
  std::vector<std::string> unread, elsewhere;
  for (const auto& key : hp.unread_keys()) {
    if (hp[key].is_null()) continue;
    const bool known = std::find(outside.begin(), outside.end(), key) != outside.end();
    (known ? elsewhere : unread).push_back(key);
  }
  auto join = [](const std::vector<std::string>& keys) {
    std::string list;
    for (const auto& key : keys) list += (list.empty() ? "" : ", ") + key;
    return list;
  };
  if (dry_run && speak && !elsewhere.empty()) {
    MASR_LOG_INFO(
        "train: %zu %s for data preparation, the test stage, beam search or experiment "
        "tracking, which training does not do: %s",
        elsewhere.size(), elsewhere.size() == 1 ? "key is" : "keys are", join(elsewhere).c_str());
  }
  if (unread.empty()) return;
  const std::string list = join(unread);
  const std::string what = "hparams " + hp.source() + ": " + std::to_string(unread.size()) +
                           (unread.size() == 1 ? " key is" : " keys are") +
                           " read by no object and not by mamba-asr's trainer: " + list;
  if (strict) {
    throw_config_error("train: " + what + " (--strict; remove them, or train without --strict)");
  }
  if (speak) {
    MASR_LOG_WARN(
        "train: %s (SpeechBrain keeps such keys too, and its train.py or data "
        "preparation may read them; --strict makes this an error)",
        what.c_str());
  }
}

void list_classes() {
  for (const auto* info : hparams::Registry::global().all()) {
    std::cout << info->name << (info->kind == hparams::CallableKind::kFunction ? " (function)" : "")
              << (info->implemented() ? "" : " [declared]") << "\n    " << info->summary << "\n";
    if (!info->aliases.empty()) {
      std::cout << "    also:";
      for (const auto& alias : info->aliases) std::cout << " " << alias;
      std::cout << "\n";
    }
  }
}

// This process's command line without `--nproc N` / `--nproc=N`, for the ranks it starts.
std::vector<std::string> command_line_without_nproc() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end - start));
    start = end == std::string::npos ? raw.size() : end + 1;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;  // and its value
    } else if (args[i].rfind("--nproc=", 0) != 0) {
      out.push_back(args[i]);
    }
  }
  return out;
}

// The device of this rank: cuda / auto-with-CUDA become cuda:LOCAL_RANK (one GPU per rank);
// an explicit cuda:N stays.
runtime::DeviceChoice rank_device(const runtime::DeviceChoice& given, int local_rank) {
  runtime::DeviceChoice choice = runtime::resolve_device(given);
  if (choice.is_cuda() && given.index < 0) choice.index = local_rank;
  return choice;
}

// Data-parallel CUDA ranks of one host each take their block of this process's CPUs
// (runtime/cpu_affinity.h), before LibTorch, NCCL and the loader start their threads.
// MASR_CORE_BINDING=0 leaves them unbound (several jobs sharing one host, say).
void bind_rank_to_cores(const train::ParallelEnv& env, const runtime::DeviceChoice& device) {
  const char* setting = std::getenv("MASR_CORE_BINDING");
  if (env.local_world_size <= 1 || (setting != nullptr && std::string(setting) == "0")) return;
  if (!train::pick_training_device(device).is_cuda()) return;
  const std::vector<int> cpus = runtime::allowed_cpus();
  const std::vector<int> share = runtime::rank_cpu_share(cpus, runtime::cpu_places(cpus),
                                                         env.local_rank, env.local_world_size);
  if (share.size() == cpus.size()) return;  // fewer CPUs than ranks
  if (runtime::bind_process_to(share)) {
    MASR_LOG_INFO("train: local rank %d of %d runs on CPUs %s (MASR_CORE_BINDING=0: unbound)",
                  env.local_rank, env.local_world_size, runtime::cpu_list_string(share).c_str());
  } else {
    MASR_LOG_WARN("train: local rank %d could not be bound to CPUs %s; it runs unbound",
                  env.local_rank, runtime::cpu_list_string(share).c_str());
  }
}

int run_train(const TrainOptions& options, const GlobalOptions& global,
              const std::vector<std::string>& extras) {
  const auto started = std::chrono::steady_clock::now();
  if (options.list_classes) {
    list_classes();
    return 0;
  }
  if (options.hparams_file.empty()) {
    throw Error(ErrorKind::kUsage,
                "train: give an hparams file, e.g. mamba-asr train "
                "hparams/CTC/conmamba_tiny.yaml --dry-run");
  }
  if (!options.trace.empty() && !runtime::KinetoTrace::available()) {
    throw Error(ErrorKind::kUsage,
                "train: --trace needs a CUDA build of mamba-asr on LibTorch >= 2 (Kineto); use "
                "--profile N for phase timings");
  }
  if (options.nproc_given) {
    if (options.nproc < 1) {
      throw Error(ErrorKind::kUsage, "train: --nproc " + std::to_string(options.nproc) +
                                         " must be at least 1 (the number of local processes)");
    }
    if (std::getenv("WORLD_SIZE") != nullptr) {
      throw Error(ErrorKind::kUsage,
                  "train: --nproc is given but WORLD_SIZE is set (already a launched rank?); "
                  "use one or the other");
    }
    if (!options.dry_run && !options.average_only && !options.list_classes) {
      return train::run_local_ranks(options.nproc, command_line_without_nproc());
    }
  }
  const auto env = options.dry_run ? std::nullopt : train::parallel_env_from_environment();
  if (env && env->world_size > 1 && !options.average_only) {
    bind_rank_to_cores(*env, global.device);
  }
  hparams::LoadOptions load;
  load.overrides = hparams::parse_override_args(extras);
  load.overrides_yaml = options.overrides_yaml;
  // `auto` runtime knobs (hparams or --threads auto): the cached plan, else the detect profile.
  const auto resolved =
      toolkit::resolve_auto(options.hparams_file, load.overrides,
                            runtime::resolve_device(global.device), global.threads_auto);
  for (const auto& o : resolved.overrides) load.overrides.push_back(o);
  if (resolved.threads > 0) runtime::apply_threads(resolved.threads);
  const hparams::Hparams hp = hparams::load_file(options.hparams_file, load);
  if (options.dry_run) {
    std::cout << hp.to_yaml();
    print_summary(hp);
    // What training reads before its first batch, so that the keys it would leave unread show.
    // A file that resolves but is no complete recipe still passes a dry run (without --strict),
    // with a warning saying where training would stop.
    try {
      train::read_training_settings(hp);
    } catch (const Error& e) {
      if (options.strict || e.kind() != ErrorKind::kConfig) throw;
      MASR_LOG_WARN("train: --dry-run: training would stop here: %s (unread keys not checked)",
                    e.what());
      return 0;
    }
    check_unread_keys(hp, options.strict, true, true);
    return 0;
  }
  train::TrainRunOptions run;
  run.quiet = global.quiet;
  run.device = global.device;
  if (resolved.threads == 0 && global.threads == 0 && std::getenv("OMP_NUM_THREADS") == nullptr) {
    // No thread count given: each process takes its share of the cores. A GPU process keeps few
    // (runtime::gpu_training_threads says why); CPU ranks of one host split the cores.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int ranks = env ? env->local_world_size : 1;
    int threads = 0;
    if (train::pick_training_device(global.device).is_cuda()) {
      const hparams::Value* workers = hp.find("num_workers");
      threads = runtime::gpu_training_threads(
          cores, ranks, workers != nullptr ? static_cast<int>(workers->as_int()) : 0);
    } else if (ranks > 1) {
      threads = std::max(1, cores / ranks);
    }
    if (threads > 0) {
      runtime::apply_threads(threads);
      MASR_LOG_INFO("train: %d CPU threads for LibTorch in this process (--threads N to change)",
                    threads);
    }
  }
  run.stop_requested = [] { return g_stop_signals > 0; };
  run.ckpt_interval_steps = options.ckpt_every_steps;
  run.ckpt_interval_minutes = options.ckpt_every_minutes;
  run.profile_steps = options.profile_steps;
  run.profile_from = options.profile_from;
  run.trace_path = options.trace;
  run.started = started;
  run.activation_checkpointing = options.activation_checkpointing;
  run.speechbrain_batch_order = options.speechbrain_batch_order;
  run.init_model = options.init_model;
  if (env && env->world_size > 1) {
    if (env->rank != 0) set_log_level(LogLevel::kWarn);  // rank 0 speaks for all
    run.device = rank_device(global.device, env->local_rank);
    if (!options.average_only) {
      const auto joining = std::chrono::steady_clock::now();
      run.parallel = train::make_c10d_data_parallel(*env, run.device);
      run.process_group_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - joining).count();
    }
  }
  // One training loop for every recipe: an LM recipe (`model` is a TransformerLM) trains the LM
  // task, any other the ASR task (train/train_loop.h).
  train::TrainLoop loop(hp, run);
  check_unread_keys(hp, options.strict, !env || env->rank == 0, false);
  if (options.average_only) {
    std::cout << loop.average_checkpoints() << "\n";
    return 0;
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const train::TrainOutcome outcome = loop.fit();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  return outcome == train::TrainOutcome::kFinished ? 0 : 130;
}

}  // namespace

Runner add_train_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train the model an hparams file describes.\n\n"
      "Hparams files are SpeechBrain-style YAML (HyperPyYAML: !new:, !name:, !ref, !apply:, ...);\n"
      "Mamba-ASR's eight files load unchanged, and so do SpeechBrain's LibriSpeech recipes of\n"
      "these families (v1.0.0 to main): the Conformer, Transformer and Branchformer\n"
      "encoder-decoders (ASR/transformer, HyperMixing ones too), the CTC Conformer and\n"
      "Branchformer (ASR/CTC) and the Transformer LM; docs/hparams.md lists the files tested.\n"
      "Pretrained-encoder (wav2vec2, WavLM, Whisper), RNN and LLM recipes are refused with an\n"
      "error naming them.\n"
      "Any top-level key can be overridden on the command line with --key value or\n"
      "--key=value, before references resolve, exactly as in SpeechBrain.\n\n"
      "Training writes <output_folder>/{hyperparams.yaml, train_log.txt, log.jsonl,\n"
      "training_curves.svg, save/}. It resumes from the newest checkpoint in save/ when run again\n"
      "(after a crash, kill -9 or Ctrl-C: SIGINT/SIGTERM write a checkpoint first), and ends by\n"
      "averaging the best avg_checkpoints checkpoints into <output_folder>/model.masr.\n\n"
      "On GPUs (LibTorch >= 2) batches are padded to recurring shapes and, from a run's second\n"
      "epoch, each shape's step is replayed as a CUDA graph (the first epoch counts shapes):\n"
      "MASR_CUDA_GRAPHS=0 turns graphs off, =1 captures from the first batch, MASR_SHAPE_GRID=0\n"
      "leaves batches unpadded (docs/training.md).\n\n"
      "Examples:\n"
      "  mamba-asr train hparams/S2S/conmamba_large.yaml --data_folder /data/LibriSpeech "
      "--dry-run\n"
      "  mamba-asr train hparams/CTC/conmamba_tiny.yaml --seed 7 --number_of_epochs 5\n"
      "  mamba-asr train hparams/CTC/conmamba_tiny.yaml --average-only\n"
      "  mamba-asr --device cuda train hparams/S2S/conmamba_large.yaml --profile 30\n"
      "  mamba-asr train hparams/CTC/conmamba_tiny.yaml --nproc 2 --device cpu\n"
      "  mamba-asr train hparams/LM/transformer_tiny.yaml --data_folder DIR   (a language model)\n"
      "  mamba-asr train my.yaml --overrides \"{batch_size: 8, mamba_config: {d_state: 8}}\"");
  cmd->add_option("hparams", options->hparams_file, "The hparams YAML file");
  cmd->add_flag("--dry-run", options->dry_run,
                "Resolve the file and build its objects, print the resolved YAML (stdout) and a "
                "summary (stderr); touch no data");
  cmd->add_option("--overrides", options->overrides_yaml,
                  "Overrides as a YAML mapping, e.g. \"{seed: 1, lr_adam: 0.001}\"");
  cmd->add_flag("--average-only", options->average_only,
                "Only average the best checkpoints in save_folder into the final model");
  cmd->add_option("--ckpt-every-steps", options->ckpt_every_steps,
                  "Also checkpoint every N optimizer steps (hparams ckpt_interval_steps)");
  cmd->add_option("--ckpt-every-minutes", options->ckpt_every_minutes,
                  "Also checkpoint every M minutes inside epochs (hparams ckpt_interval_minutes)");
  CLI::Option* nproc = cmd->add_option(
      "--nproc", options->nproc,
      "Train with N local processes (data parallel: Gloo on the CPU, NCCL with one GPU "
      "per process); each gets torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
      "MASTER_PORT");
  cmd->add_option("--profile", options->profile_steps,
                  "Time the phases of the first N batches (data wait, host-to-device, features, "
                  "normalize, augment, encoder, decoder, loss, backward, collectives, clip, "
                  "optimizer, ...; CUDA events on GPUs, with host-sync counts), print the table "
                  "and write <output_folder>/profile.json, then train on (docs/training.md)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--profile-from", options->profile_from,
                  "With --profile or --trace: start the profiled batches after this many, past "
                  "the warm-up (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  cmd->add_option("--trace", options->trace,
                  "Write a Chrome trace (Kineto: CPU operators and CUDA kernels) of 3 batches from "
                  "--profile-from on to FILE (FILE-rankR.json on other ranks); CUDA builds; "
                  "bench/trace_summary.py sums it by kernel");
  cmd->add_flag("--activation-checkpointing", options->activation_checkpointing,
                "Keep only each encoder layer's input for the backward and run the layer again "
                "there: less GPU memory for about one more encoder forward per step (hparams "
                "activation_checkpointing; docs/training.md)");
  cmd->add_option("--init-model", options->init_model,
                  "Start from this model file's weights and tokenizer (a model.masr, float32 or "
                  "float16) when the save folder has no checkpoint: a warm start with a fresh "
                  "optimizer and learning-rate schedule; the architecture must be the hparams' "
                  "(a checkpoint, once written, wins)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--speechbrain-batch-order", options->speechbrain_batch_order,
                "Hand out the batch plan as SpeechBrain does: the batches of one step (over "
                "--nproc ranks and grad_accumulation_factor) as they come. Default: batches of "
                "similar padded length, so ranks wait less for each other (hparams "
                "bucket_aligned_steps; docs/training.md)");
  cmd->add_flag("--strict", options->strict,
                "Keys that no object and not the trainer read are an error (default: a warning "
                "naming them; SpeechBrain keeps them silently)");
  cmd->add_flag("--list-classes", options->list_classes,
                "List the class and function names hparams files may use");
  add_global_options(*cmd, global);
  cmd->allow_extras();      // --key value overrides ...
  cmd->fallthrough(false);  // ... stay here instead of reaching the root's parser
  return [options, cmd, nproc, &global] {
    options->nproc_given = nproc->count() > 0;
    return run_train(*options, global, cmd->remaining());
  };
}

}  // namespace masr::cli

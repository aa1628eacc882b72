// apps/mamba-asr/detect.cpp
// `mamba-asr detect`: what this machine offers (CPU, memory, CUDA devices, MPS, LibTorch), the
// device that `--device` resolves to, and the runtime profile for it (and for a model).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "core/error.h"
#include "hparams/hparams.h"
#include "toolkit/auto_settings.h"
#include "runtime/device.h"
#include "runtime/machine.h"
#include "toolkit/model_facts.h"
#include "toolkit/profile.h"

namespace masr::cli {
namespace {

struct DetectOptions {
  bool json = false;
  bool yaml = false;
  std::string hparams, model;
};

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out.empty() ? "-" : out;
}

nlohmann::json to_json(const runtime::MachineInfo& m, const runtime::DeviceChoice& device) {
  nlohmann::json cuda = nlohmann::json::array();
  for (const auto& d : m.cuda) {
    cuda.push_back({{"index", d.index},
                    {"name", d.name},
                    {"compute_capability",
                     std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)},
                    {"memory_total_bytes", d.memory_total_bytes},
                    {"memory_free_bytes", d.memory_free_bytes},
                    {"multiprocessors", d.multiprocessors},
                    {"bf16", d.bf16},
                    {"fp16", d.fp16},
                    {"tf32", d.tf32}});
  }
  return {{"torch_version", m.torch_version},
          {"device", device.str()},
          {"cpu",
           {{"model", m.cpu.model},
            {"logical_cores", m.cpu.logical_cores},
            {"physical_cores", m.cpu.physical_cores},
            {"isa", m.cpu.isa},
            {"memory_total_bytes", m.cpu.memory_total_bytes},
            {"memory_available_bytes", m.cpu.memory_available_bytes},
            {"numa_nodes", m.cpu.numa_nodes},
            {"parallel_backend", m.cpu.parallel_backend},
            {"intra_op_threads", m.cpu.intra_op_threads},
            {"inter_op_threads", m.cpu.inter_op_threads},
            {"blas", m.cpu.blas.empty() ? "built into LibTorch" : m.cpu.blas},
            {"blas_is_reference", m.cpu.blas_is_reference}}},
          {"cuda_build", m.cuda_build},
          {"cuda_available", !m.cuda.empty()},
          {"cuda_driver_version", m.cuda_driver_version},
          {"cuda_runtime_version", m.cuda_runtime_version},
          {"cuda_devices", cuda},
          {"mps_available", m.mps}};
}

// "1 intra-op / 1 inter-op threads now; profile: 2 (decode --threads auto measures 1 to 2)":
// the count this process runs with beside the profile's, so they never seem to disagree
// (--threads auto takes a cached plan's count first, docs/runtime.md).
std::string threads_text(const runtime::CpuInfo& c, int profile_threads) {
  return std::to_string(c.intra_op_threads) + " intra-op / " + std::to_string(c.inter_op_threads) +
         " inter-op threads now; profile: " + std::to_string(profile_threads) +
         " (decode --threads auto measures 1 to " + std::to_string(profile_threads) + ")";
}

void print_table(const runtime::MachineInfo& m, const runtime::DeviceChoice& device,
                 int auto_threads) {
  const auto& c = m.cpu;
  std::printf("%-18s %s\n", "LibTorch", m.torch_version.c_str());
  std::printf("%-18s %s\n", "CPU", c.model.empty() ? "unknown" : c.model.c_str());
  std::printf("%-18s %d logical, %d physical, %d NUMA node(s)\n", "cores", c.logical_cores,
              c.physical_cores, c.numa_nodes);
  std::printf("%-18s %s\n", "vector ISA", join(c.isa).c_str());
  std::printf("%-18s %s total, %s available\n", "memory", gib(c.memory_total_bytes).c_str(),
              gib(c.memory_available_bytes).c_str());
  std::printf("%-18s %s, %s\n", "parallelism", c.parallel_backend.c_str(),
              threads_text(c, auto_threads).c_str());
  std::printf("%-18s %s%s\n", "BLAS", c.blas.empty() ? "built into LibTorch" : c.blas.c_str(),
              c.blas_is_reference ? " (reference implementation: slow)" : "");
  if (m.cuda.empty()) {
    std::printf("%-18s %s\n", "CUDA",
                m.cuda_build ? "no device" : "not in this build (CPU LibTorch)");
  }
  for (const auto& d : m.cuda) {
    std::printf("%-18s %s, compute %d.%d, %d SMs, %s (%s free), bf16 %s, TF32 %s\n",
                ("cuda:" + std::to_string(d.index)).c_str(), d.name.c_str(), d.compute_major,
                d.compute_minor, d.multiprocessors, gib(d.memory_total_bytes).c_str(),
                gib(d.memory_free_bytes).c_str(), d.bf16 ? "yes" : "no", d.tf32 ? "yes" : "no");
  }
  if (!m.cuda.empty()) {
    std::printf("%-18s driver %d, runtime %d\n", "CUDA versions", m.cuda_driver_version,
                m.cuda_runtime_version);
  }
  std::printf("%-18s %s\n", "MPS", m.mps ? "available" : "not available");
  std::printf("%-18s %s\n", "selected device", device.str().c_str());
}

nlohmann::json model_json(const toolkit::ModelFacts& f) {
  return {{"source", f.source},
          {"type", f.model_type},
          {"parameters", f.parameters},
          {"d_model", f.d_model},
          {"d_ffn", f.d_ffn},
          {"encoder_layers", f.encoder_layers},
          {"decoder_layers", f.decoder_layers},
          {"static_train_bytes", f.static_train_bytes},
          {"activation_bytes_per_audio_s_estimate", f.activation_bytes_per_audio_s},
          {"hparams_hash", f.hparams_hash}};
}

int run_detect(const DetectOptions& options, const GlobalOptions& global) {
  if (!options.hparams.empty() && !options.model.empty()) {
    throw Error(ErrorKind::kUsage, "detect: give --hparams or --model, not both");
  }
  if (options.json && options.yaml) {
    throw Error(ErrorKind::kUsage, "detect: give --json or --yaml, not both");
  }
  const runtime::DeviceChoice device = runtime::resolve_device(global.device);
  const auto machine = runtime::detect_machine();
  std::optional<toolkit::ModelFacts> facts;
  std::optional<hparams::Hparams> hp;
  if (!options.hparams.empty()) {
    hp = toolkit::load_hparams_for_runtime(options.hparams, {}, machine, device);
    facts = toolkit::model_facts_from(*hp);
    facts->source = options.hparams;
  } else if (!options.model.empty()) {
    facts = toolkit::model_facts_from_model(options.model);
  }
  const toolkit::RuntimeProfile profile =
      toolkit::derive_profile(machine, device, facts ? &*facts : nullptr);
  if (options.yaml) {
    std::cout << toolkit::profile_to_override_yaml(profile, hp ? &*hp : nullptr);
  } else if (options.json) {
    nlohmann::json j = to_json(machine, device);
    j["cpu"]["auto_threads_max"] = profile.intra_op_threads;  // --threads auto measures up to it
    j["profile"] = toolkit::profile_to_json(profile);
    if (facts) j["model"] = model_json(*facts);
    std::cout << j.dump(2) << "\n";
  } else {
    print_table(machine, device, profile.intra_op_threads);
    if (facts) {
      std::printf(
          "\n%-18s %s: %s, %.3g M parameters, d_model %lld, %lld encoder / %lld decoder "
          "layers, hparams hash %s\n",
          "model", facts->source.c_str(), facts->model_type.c_str(), facts->parameters / 1e6,
          static_cast<long long>(facts->d_model), static_cast<long long>(facts->encoder_layers),
          static_cast<long long>(facts->decoder_layers), facts->hparams_hash.c_str());
    }
    std::printf(
        "\nprofile (from the design documents' %s profile, adjusted to this machine%s):\n%s",
        device.is_cuda()                                   ? "CUDA"
        : device.type == runtime::DeviceChoice::Type::kMps ? "MPS"
                                                           : "CPU",
        facts ? " and model" : "", toolkit::format_profile(profile).c_str());
  }
  return 0;
}

}  // namespace

Runner add_detect_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<DetectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "detect",
      "Show this machine's hardware and the runtime profile mamba-asr picks for it.\n\n"
      "What the machine offers (CPU, ISA, memory, NUMA, CUDA devices, MPS, LibTorch),\n"
      "the device mamba-asr picks, and the runtime profile for it: precision, batch and\n"
      "accumulation, batch length, workers, threads, TF32, cudnn benchmark, allocator.\n"
      "With --hparams or --model the profile is sized to the model.\n\n"
      "Examples:\n"
      "  mamba-asr detect\n"
      "  mamba-asr --device cuda:1 detect --json\n"
      "  mamba-asr detect --hparams hparams/CTC/conmamba_tiny.yaml\n"
      "  mamba-asr train H.yaml --overrides \"$(mamba-asr detect --hparams H.yaml --yaml)\"");
  cmd->add_flag("--json", options->json, "Machine-readable output");
  cmd->add_flag("--yaml", options->yaml,
                "The profile as hparams overrides (for train --overrides)");
  cmd->add_option("--hparams", options->hparams, "Size the profile to this hparams file's model");
  cmd->add_option("-m,--model", options->model,
                  "Size the profile to this trained model (a model file or its folder)");
  return [options, &global] { return run_detect(*options, global); };
}

}  // namespace masr::cli

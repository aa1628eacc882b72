// apps/mamba-asr/decode.cpp
// `mamba-asr decode --model MODEL INPUTS...`: transcribes audio.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "audio/raw_pcm.h"
#include "bundled_model.h"
#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress_display.h"
#include "decode/decode_inputs.h"
#include "decode/recognizer.h"
#include "decode/subtitle_cues.h"
#include "decode/transcript_writer.h"
#include "model_defaults.h"
#include "models/asr_model.h"
#include "runtime/device.h"
#include "text/scoring.h"
#include "toolkit/auto_settings.h"
#include "toolkit/decode_threads.h"

namespace masr::cli {
namespace {

struct DecodeOptions {
  decode::RecognizerConfig recognizer;  // model, device, search and its options, LMs
  std::string search = "auto";          // parsed into recognizer.decode.search
  std::vector<std::string> inputs;
  std::string data_root;        // fills a CSV's $data_root, as SpeechBrain's replacements do
  std::string format = "text";  // parsed into `formats`; txt when only --output-dir is given
  std::string output_dir;
  std::string ref;
  bool wer_details = false;
  decode::TranscribeOptions transcribe;  // batching, chunking of long files, read-ahead
  int beam = 10;
  std::string raw_pcm;  // "s16le:16000": inputs are headerless PCM
  decode::SubtitleOptions subtitles;
  bool no_model_defaults = false;  // ignore the model folder's decode.json
};

std::map<std::string, std::string> read_references(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_io_error("cannot open reference file '" + path + "'");
  std::map<std::string, std::string> refs;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find_first_of(" \t");
    if (line.empty()) continue;
    refs[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return refs;
}

// Whether `path` holds an ARPA n-gram LM (by name or by its "\data\" line), which --lm (a
// neural LM file) cannot read.
bool looks_like_arpa(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  if (name.find(".arpa") != std::string::npos) return true;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
  }
  return line.rfind("\\data\\", 0) == 0;
}

// The model folder's decode.json (model_defaults.h): each option the command line does not give
// is set as if it had been given, through the option's own conversion and checks. Returns the
// options it set.
std::set<std::string> apply_model_defaults(DecodeOptions& o, CLI::App& cmd) {
  if (o.no_model_defaults || !o.recognizer.hparams.empty()) return {};
  const ModelDefaults defaults = read_model_defaults(o.recognizer.model);
  std::set<std::string> applied;
  std::string said;
  for (const auto& [option, value] : defaults.options) {
    CLI::Option* opt = cmd.get_option(option);
    if (opt->count() > 0) continue;  // the command line wins
    try {
      opt->add_result(value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      throw_config_error(defaults.file + ": " + option + " " + value + ": " + e.what());
    }
    applied.insert(option);
    said += " " + option + " " + value;
  }
  if (!applied.empty()) {
    MASR_LOG_INFO(
        "decode: the model's defaults (%s):%s; options given here win, "
        "--no-model-defaults drops them",
        defaults.file.c_str(), said.c_str());
  }
  return applied;
}

// Options given on the command line that the chosen search, format or chunking never reads: a
// warning each, so that a run does not look like it used them (those the model's defaults set
// are not the user's: no warning).
void warn_unused_options(const CLI::App& cmd, const std::set<std::string>& from_model,
                         decode::Search search, const DecodeOptions& o,
                         const std::vector<decode::OutputFormat>& formats) {
  using decode::Search;
  const bool beam =
      search == Search::kCtcBeam || search == Search::kS2S || search == Search::kRescore;
  const bool decoder = search == Search::kS2S || search == Search::kRescore;
  const bool subtitles = std::any_of(formats.begin(), formats.end(), [](decode::OutputFormat f) {
    return f == decode::OutputFormat::kSrt || f == decode::OutputFormat::kVtt;
  });
  const bool lm = !o.recognizer.lm.empty();
  const bool arpa = !o.recognizer.arpa.empty();
  const bool ctc_beam = search == Search::kCtcBeam || search == Search::kRescore;
  struct Rule {
    const char* option;
    bool used;
    const char* needs;
  };
  const std::string mode = std::string("--search ") + decode::search_name(search);
  const Rule rules[] = {
      {"--beam", beam, "a beam search (ctc-beam, s2s, rescore)"},
      {"--nbest", beam, "a beam search (ctc-beam, s2s, rescore)"},
      // rescore ranks the n-best of the CTC beam search, which the n-gram steers.
      {"--arpa", ctc_beam, "--search ctc-beam or rescore"},
      {"--arpa-weight", ctc_beam && arpa, "--search ctc-beam or rescore with --arpa"},
      {"--word-bonus", ctc_beam && arpa, "--search ctc-beam or rescore with --arpa"},
      {"--unk-offset", ctc_beam && arpa, "--search ctc-beam or rescore with --arpa"},
      {"--beam-prune-logp", search == Search::kCtcBeam || search == Search::kRescore,
       "--search ctc-beam or rescore"},
      {"--token-prune-min-logp", search == Search::kCtcBeam || search == Search::kRescore,
       "--search ctc-beam or rescore"},
      {"--lm-weight", lm, "--lm"},
      {"--lm-temperature", lm, "--lm"},
      {"--lm-token-bonus", lm && search == Search::kCtcBeam, "--search ctc-beam with --lm"},
      {"--ctc-weight", search == Search::kS2S, "--search s2s"},
      {"--ctc-pre-beam", search == Search::kS2S, "--search s2s"},
      {"--max-decode-ratio", search == Search::kS2S, "--search s2s"},
      {"--no-decoder-cache", search == Search::kS2S, "--search s2s"},
      {"--temperature", decoder, "--search s2s or rescore"},
      {"--rescore-ctc-weight", search == Search::kRescore, "--search rescore"},
      {"--cue-chars", subtitles, "--format srt or vtt"},
      {"--cue-lines", subtitles, "--format srt or vtt"},
      {"--cue-seconds", subtitles, "--format srt or vtt"},
      {"--chunk-overlap", o.transcribe.chunking.chunk_seconds > 0, "--chunk-seconds above 0"},
      {"--chunk-context", o.transcribe.chunking.chunk_seconds > 0, "--chunk-seconds above 0"},
  };
  for (const Rule& r : rules) {
    if (r.used || cmd.count(r.option) == 0 || from_model.count(r.option) > 0) continue;
    MASR_LOG_WARN("%s has no effect here (%s; it needs %s)", r.option, mode.c_str(), r.needs);
  }
}

// "decoding 3 utterances with ctc-beam search and the ARPA LM lm.arpa on cpu"
std::string decode_header(size_t count, const decode::Recognizer& r, const DecodeOptions& o) {
  std::string lms;
  if (!o.recognizer.arpa.empty() &&
      (r.search() == decode::Search::kCtcBeam || r.search() == decode::Search::kRescore)) {
    lms += " and the ARPA LM " + o.recognizer.arpa;
  }
  if (!o.recognizer.lm.empty())
    lms += (lms.empty() ? " and the LM " : ", the LM ") + o.recognizer.lm;
  return "decoding " + std::to_string(count) + (count == 1 ? " utterance" : " utterances") +
         " with " + decode::search_name(r.search()) + " search" + lms + " on " + r.device().str();
}

// WER and CER of the transcripts that have a reference (--ref, a CSV's wrd, a Kaldi text),
// accumulated as results arrive.
class WerReport {
 public:
  WerReport(std::map<std::string, std::string> refs, bool details)
      : refs_(std::move(refs)), details_(details) {}
  void add(const data::ManifestRow& row, const decode::Transcript& t) {
    const auto it = refs_.find(row.id);
    if (it == refs_.end() && row.wrd.empty()) return;
    const std::string& ref = it != refs_.end() ? it->second : row.wrd;
    const auto& u = wer_.append_text(row.id, ref, t.text);
    cer_.append_text(row.id, ref, t.text);
    if (details_) std::cerr << row.id << "\n" << text::format_alignment(u) << "\n";
  }
  void print() const {
    if (wer_.utterances().empty()) return;
    std::cerr << wer_.summarize().to_string("WER") << "\n"
              << cer_.summarize().to_string("CER") << "\n";
  }

 private:
  std::map<std::string, std::string> refs_;
  bool details_;
  text::ErrorRateStats wer_, cer_{true};
};

int run_decode(DecodeOptions& o, const GlobalOptions& global, CLI::App& cmd) {
  runtime::apply_threads(global.threads);
  if (o.recognizer.model.empty()) o.recognizer.model = default_model("decode", kDefaultDecodeModel);
  const std::set<std::string> from_model = apply_model_defaults(o, cmd);
  if (!o.recognizer.lm.empty() && looks_like_arpa(o.recognizer.lm)) {
    throw Error(ErrorKind::kUsage,
                "decode: --lm takes a neural LM model file (mamba-asr train "
                "hparams/LM/...); '" +
                    o.recognizer.lm + "' is an ARPA n-gram: give it as --arpa " + o.recognizer.lm +
                    " (with --search ctc-beam)");
  }
  const std::vector<decode::OutputFormat> formats = decode::parse_output_formats(
      cmd.count("--format") == 0 && !o.output_dir.empty() ? "txt" : o.format);
  o.recognizer.device = global.device;
  o.recognizer.decode.search = decode::parse_search(o.search);
  o.recognizer.set_beam(o.beam);
  o.recognizer.validate();
  o.subtitles.validate();
  o.transcribe.validate();
  std::optional<audio::RawPcmFormat> raw_pcm;
  if (!o.raw_pcm.empty()) raw_pcm = audio::parse_raw_pcm_spec(o.raw_pcm);
  const std::unique_ptr<decode::Recognizer> recognizer = decode::Recognizer::open(o.recognizer);
  if (global.threads_auto) {  // the cached plan's decode threads, else measured now
    std::string source;
    const int threads = toolkit::auto_decode_threads(recognizer->model().hparams_yaml(),
                                                     recognizer->device(), &source);
    runtime::apply_threads(threads);
    if (source == "profile" && recognizer->device().is_cpu()) {
      // Only as many threads as there are idle CPUs now are worth timing (toolkit::idle_cpus).
      const int idle = toolkit::idle_cpus(threads);
      std::string timings;
      if (idle > 1) {
        runtime::apply_threads(toolkit::measure_decode_threads(*recognizer, idle, &timings));
        source = "measured: " + timings + " for 1 s of audio";
      } else {
        runtime::apply_threads(1);
        source = "every other CPU is busy";
      }
    } else {
      source = "from the " + source;
    }
    const int chosen = at::get_num_threads();
    MASR_LOG_INFO("auto: %d thread%s (%s)", chosen, chosen == 1 ? "" : "s", source.c_str());
  }
  const decode::DecodeInputs inputs = decode::gather_decode_inputs(
      o.inputs, std::cin,
      o.data_root.empty() ? data::Replacements{} : data::Replacements{{"data_root", o.data_root}},
      raw_pcm);
  const std::vector<data::ManifestRow>& rows = inputs.rows;
  if (rows.empty()) {
    std::string named;
    for (const auto& input : o.inputs) named += (named.empty() ? "" : ", ") + input;
    throw_input_error("decode: the inputs (" + named +
                      ") name no audio: an empty folder, list or CSV? Nothing to decode");
  }
  decode::TranscriptWriter writer(formats, o.output_dir, o.subtitles, std::cout);
  writer.check(rows.size());
  WerReport wer(o.ref.empty() ? std::map<std::string, std::string>() : read_references(o.ref),
                o.wer_details);
  warn_unused_options(cmd, from_model, recognizer->search(), o, formats);
  MASR_LOG_INFO("%s", decode_header(rows.size(), *recognizer, o).c_str());
  const auto start = std::chrono::steady_clock::now();
  decode::DecodeProgressDisplay progress(ProgressDisplay::detect(global.quiet));
  size_t failed = 0;
  double audio_seconds = 0.0;
  // Each transcript is printed as soon as it and every input before it are decoded.
  recognizer->transcribe(
      rows, o.transcribe,
      [&](decode::FileResult&& r) {
        audio_seconds += r.seconds;
        if (!r.transcript) {
          ++failed;
          MASR_LOG_ERROR("skipping '%s': %s", rows[r.row].id.c_str(), r.error.c_str());
          return;
        }
        writer.write(*r.transcript);
        wer.add(rows[r.row], *r.transcript);
      },
      [&progress](const decode::DecodeCounts& counts) { progress.update(counts); }, &inputs.audio);
  progress.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  wer.print();
  if (audio_seconds > 0 && seconds > 0) {  // files to text: reading overlaps decoding
    MASR_LOG_INFO("%.1f s of audio read and decoded in %.2f s: RTF %.4f, RTFx %.1f", audio_seconds,
                  seconds, seconds / audio_seconds, audio_seconds / seconds);
  }
  if (!o.output_dir.empty()) {
    MASR_LOG_INFO("%zu file%s written under %s", writer.files_written(),
                  writer.files_written() == 1 ? "" : "s", o.output_dir.c_str());
  }
  if (failed > 0) {
    MASR_LOG_ERROR("%zu of %zu input%s could not be read", failed, rows.size(),
                   rows.size() == 1 ? "" : "s");
  }
  return failed > 0 ? static_cast<int>(ExitCode::kFailure) : 0;
}

}  // namespace

Runner add_decode_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<DecodeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "decode",
      "Transcribe audio with a trained model.\n\n"
      "INPUTS are audio files, folders (searched recursively), @list.txt, SpeechBrain CSVs,\n"
      "Kaldi wav.scp files, or - for stdin (one audio file, or a list of paths). Ids are file\n"
      "names without extension (paths below the folder when names repeat). Transcripts go to\n"
      "stdout as 'ID TEXT', or with -o DIR to one file per input and format; progress to "
      "stderr.\n\n"
      "Without --model, the bundled English model (models/" +
          std::string(kDefaultDecodeModel) +
          ":\ntrained on synthetic speech only; its README.md says what it recognizes) or\n"
          "$MASR_MODEL. A model folder's decode.json sets the options not given here (the search\n"
          "and LM the model was measured with; --no-model-defaults ignores it).\n\n"
          "Examples:\n"
          "  mamba-asr decode audio.wav\n"
          "  mamba-asr decode -m results/ctc/model.masr audio.wav\n"
          "  mamba-asr decode -m results/ctc talks/ -o subs --format srt,json\n"
          "  mamba-asr decode -m results/s2s --search s2s --beam 10 test.csv --format json\n"
          "  ffmpeg -i talk.mp4 -f wav - | mamba-asr decode --model model.masr --format srt -\n"
          "  arecord -f S16_LE -r 16000 -d 5 | mamba-asr decode --model model.masr --raw-pcm "
          "s16le:16000 -");
  DecodeOptions& o = *options;
  cmd->add_option("-m,--model", o.recognizer.model,
                  std::string("A trained model (file or folder); without it, $MASR_MODEL or the "
                              "bundled models/") +
                      kDefaultDecodeModel);
  cmd->add_flag("--no-model-defaults", o.no_model_defaults,
                "Ignore the model folder's decode.json (the search and LM it was measured with, "
                "which decode takes for every option not given here; docs/decode.md)");
  cmd->add_option(
      "--hparams", o.recognizer.hparams,
      "With a SpeechBrain / Mamba-ASR checkpoint folder as --model: the hparams it was "
      "trained with (imported on the fly; `mamba-asr import` writes a model file once)");
  cmd->add_option("inputs", o.inputs, "Audio files, folders, lists or manifests")->required();
  cmd->add_option("--data-root", o.data_root,
                  "Folder that replaces $data_root in SpeechBrain CSV inputs");
  cmd->add_option("--search", o.search, "greedy, ctc-beam, s2s, rescore or auto")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "greedy", "ctc-beam", "s2s", "rescore"}));
  cmd->add_option("--beam", o.beam, "Beam size")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--nbest", o.recognizer.decode.ctc.nbest,
                  "Hypotheses kept per utterance (JSON nbest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--format", o.format,
                  "text ('ID TEXT' lines), txt (the text alone), json, srt, vtt or ctm; several "
                  "with -o, e.g. srt,json")
      ->capture_default_str()
      ->type_name("LIST");
  cmd->add_option("-o,--output-dir", o.output_dir,
                  "Write one file per input and format here, named after the input "
                  "(DIR/NAME.srt, ...; text: one Kaldi file DIR/text); --format defaults to txt")
      ->type_name("DIR");
  cmd->add_option("--raw-pcm", o.raw_pcm,
                  "Inputs (files or - for stdin) are headerless mono PCM in this format: "
                  "ENCODING:RATE, ENCODING s16le or f32le, e.g. s16le:16000")
      ->check([](const std::string& spec) -> std::string {
        try {
          audio::parse_raw_pcm_spec(spec);
        } catch (const Error& e) {  // CLI11 puts "--raw-pcm: " in front
          const std::string message = e.what();
          return message.rfind("--raw-pcm ", 0) == 0 ? message.substr(10) : message;
        }
        return "";
      });
  cmd->add_option("--cue-chars", o.subtitles.max_line_chars,
                  "srt, vtt: at most this many characters per subtitle line")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--cue-lines", o.subtitles.max_lines, "srt, vtt: at most this many lines per cue")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--cue-seconds", o.subtitles.max_cue_seconds,
                  "srt, vtt: at most this many seconds per cue (a longer single word is kept)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--ref", o.ref, "Reference transcripts ('ID TEXT' lines) for WER");
  cmd->add_flag("--wer-details", o.wer_details, "Per-utterance alignments on stderr");
  cmd->add_option("--batch-size", o.transcribe.batching.max_utterances,
                  "Utterances per batch (longest first)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--batch-seconds", o.transcribe.batching.max_padded_seconds,
                  "At most this much audio per batch once padded to its longest utterance (0: no "
                  "limit). With a large --batch-size it keeps batches of mixed lengths from "
                  "wasting compute on padding, e.g. --batch-size 256 --batch-seconds 600 on a GPU")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--chunk-seconds", o.transcribe.chunking.chunk_seconds,
                  "Files longer than this are decoded in overlapping windows of this many "
                  "seconds, cut at pauses, so memory does not grow with their length (0: every "
                  "file in one pass)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--chunk-overlap", o.transcribe.chunking.overlap_seconds,
                  "Seconds of context on each side of a window whose frames come from the "
                  "neighbouring window")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e5));
  cmd->add_flag("!--chunk-context", o.transcribe.chunking.segments,
                "Long files: search each window's kept frames as encoded with the overlap as "
                "context, instead of encoding every stretch between two pauses again on its "
                "own, trimmed to its speech (faster: one encoder pass; docs/decode.md compares "
                "the two)");
  cmd->add_option("--read-ahead", o.transcribe.read_ahead_batches,
                  "Batches of audio read ahead of decoding")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--ctc-weight", o.recognizer.decode.s2s.ctc_weight,
                  "s2s: CTC prefix score weight")
      ->capture_default_str();
  cmd->add_option("--temperature", o.recognizer.decode.decoder_temperature,
                  "s2s: decoder temperature")
      ->capture_default_str();
  cmd->add_option("--ctc-pre-beam", o.recognizer.decode.s2s.ctc_pre_beam,
                  "s2s: CTC scores the best ctc-pre-beam x beam tokens per hypothesis "
                  "(0: the whole vocabulary, as SpeechBrain)")
      ->capture_default_str();
  cmd->add_flag("!--no-decoder-cache", o.recognizer.decode.incremental_decoder,
                "s2s: re-run the decoder over the whole prefix every step (no KV cache or "
                "recurrent Mamba state)");
  cmd->add_option("--max-decode-ratio", o.recognizer.decode.s2s.max_decode_ratio,
                  "s2s: max tokens per encoder frame")
      ->capture_default_str();
  cmd->add_option("--beam-prune-logp", o.recognizer.decode.ctc.beam_prune_logp,
                  "ctc-beam: beam pruning")
      ->capture_default_str();
  cmd->add_option("--token-prune-min-logp", o.recognizer.decode.ctc.token_prune_min_logp,
                  "ctc-beam: token pruning")
      ->capture_default_str();
  cmd->add_option("--lm", o.recognizer.lm,
                  "s2s, ctc-beam: Transformer LM file for shallow fusion (mamba-asr train "
                  "hparams/LM/...; it must share the ASR model's tokenizer)");
  cmd->add_option("--lm-weight", o.recognizer.decode.s2s.lm_weight,
                  "s2s, ctc-beam: LM weight (0.6, SpeechBrain's, when --lm is given)");
  cmd->add_option("--lm-token-bonus", o.recognizer.decode.ctc.neural_lm_token_bonus,
                  "ctc-beam: added per token with --lm (offsets the LM's per-token cost)")
      ->capture_default_str();
  cmd->add_option("--lm-temperature", o.recognizer.lm_temperature,
                  "s2s, ctc-beam: LM temperature (SpeechBrain: 1.15)");
  cmd->add_option("--arpa", o.recognizer.arpa, "ctc-beam, rescore: word n-gram LM (ARPA file)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--arpa-weight", o.recognizer.decode.ctc.arpa_weight,
                  "ctc-beam, rescore: n-gram LM weight")
      ->capture_default_str();
  cmd->add_option("--word-bonus", o.recognizer.decode.ctc.word_insertion_bonus,
                  "ctc-beam, rescore: word insertion bonus")
      ->capture_default_str();
  cmd->add_option("--unk-offset", o.recognizer.decode.ctc.unk_offset,
                  "ctc-beam, rescore: added to a word the n-gram LM does not know, and while "
                  "ranking to a "
                  "beam whose unfinished word begins none (pyctcdecode's unk_score_offset)")
      ->capture_default_str();
  add_precision_option(
      cmd, o.recognizer.decode.precision,
      {runtime::Precision::kFp32, runtime::Precision::kBf16, runtime::Precision::kFp16,
       runtime::Precision::kInt8},
      "Model arithmetic. CUDA: fp32, or bf16 / fp16 autocast (faster). CPU: fp32, or "
      "int8: the encoder's Linear layers (ConMamba models) run as LibTorch dynamic "
      "int8 layers, weights quantized per output channel once at load, inputs per "
      "frame; front end, scan and CTC head stay fp32. Measured with models/conmamba-ctc-synth-en "
      "(208 test utterances, greedy): WER 27.06 % fp32, 26.94 % int8; on a loaded "
      "2-core VM no speed gain worth naming (docs/decode.md, \"int8 on CPUs\")");
  cmd->add_option(
         "--word-start-shift", o.recognizer.decode.word_start_shift,
         "Seconds word start times are moved earlier (CTC emits a word's first token "
         "after its onset; 0.052 measured for models/conmamba-ctc-synth-en, docs/timestamps.md)")
      ->capture_default_str()
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--rescore-ctc-weight", o.recognizer.decode.rescoring.ctc_weight,
                  "rescore: CTC score weight")
      ->capture_default_str();
  return [options, &global, cmd]() -> int { return run_decode(*options, global, *cmd); };
}

}  // namespace masr::cli

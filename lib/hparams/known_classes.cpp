// lib/hparams/known_classes.cpp
// Declarations of the names SpeechBrain v1.0 and xi-j/Mamba-ASR hparams files use, with the
// keyword arguments of their Python signatures (read from SpeechBrain v1.0.0, PyTorch 2.0 and
// Mamba-ASR @ 6bace09). Subsystems replace a declaration with an implementation by registering
// the same canonical name with a `build` function.
#include <atomic>

#include "hparams/registry.h"

namespace masr::hparams {
namespace {

void declare(Registry& r, std::string name, std::vector<std::string> aliases, std::string summary,
             std::vector<std::string> params, CallableKind kind = CallableKind::kClass,
             bool variadic = false) {
  ClassInfo info;
  info.name = std::move(name);
  info.aliases = std::move(aliases);
  info.summary = std::move(summary);
  info.params = std::move(params);
  info.kind = kind;
  info.variadic = variadic;
  r.add(std::move(info));
}

constexpr auto kFunction = CallableKind::kFunction;

std::atomic<int64_t> g_seed{0};
std::atomic<bool> g_seed_set{false};

}  // namespace

void register_builtin_classes(Registry& r) {
  // ---- front end ----
  declare(r, "speechbrain.lobes.features.Fbank", {"mamba_asr.Fbank"},
          "SpeechBrain log-mel filterbank features",
          {"deltas", "context", "requires_grad", "sample_rate", "f_min", "f_max", "n_fft", "n_mels",
           "filter_shape", "param_change_factor", "param_rand_factor", "left_frames",
           "right_frames", "win_length", "hop_length"});
  declare(
      r, "speechbrain.processing.features.InputNormalization", {"mamba_asr.InputNormalization"},
      "global or per-sentence mean/variance normalization",
      {"mean_norm", "std_norm", "norm_type", "avg_factor", "requires_grad", "update_until_epoch"});
  declare(r, "speechbrain.lobes.models.convolution.ConvolutionFrontEnd",
          {"mamba_asr.ConvolutionFrontEnd"}, "2-D CNN front end (stride-2 blocks)",
          {"input_shape", "num_blocks", "num_layers_per_block", "out_channels", "kernel_sizes",
           "strides", "dilations", "residuals", "conv_module", "activation", "norm", "dropout",
           "conv_bias", "padding", "conv_init"});

  // ---- models ----
  const std::vector<std::string> transformer_asr = {"tgt_vocab",
                                                    "input_size",
                                                    "d_model",
                                                    "nhead",
                                                    "num_encoder_layers",
                                                    "num_decoder_layers",
                                                    "d_ffn",
                                                    "dropout",
                                                    "activation",
                                                    "positional_encoding",
                                                    "normalize_before",
                                                    "kernel_size",
                                                    "bias",
                                                    "encoder_module",
                                                    "conformer_activation",
                                                    "branchformer_activation",
                                                    "attention_type",
                                                    "max_length",
                                                    "causal",
                                                    "csgu_linear_units",
                                                    "gate_activation",
                                                    "use_linear_after_conv",
                                                    "output_hidden_states",
                                                    "layerdrop_prob",
                                                    "encoder_kdim",
                                                    "encoder_vdim",
                                                    "decoder_kdim",
                                                    "decoder_vdim",
                                                    "decoder_module",
                                                    "mamba_config"};
  declare(r, "modules.TransformerASR.TransformerASR",
          {"speechbrain.lobes.models.transformer.TransformerASR.TransformerASR",
           "mamba_asr.TransformerASR"},
          "encoder-decoder ASR model (ConMamba / Conformer / Transformer encoder)",
          transformer_asr);
  declare(r, "speechbrain.lobes.models.transformer.TransformerLM.TransformerLM",
          {"mamba_asr.TransformerLM"}, "Transformer language model",
          {"vocab", "d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "d_ffn",
           "dropout", "activation", "positional_encoding", "normalize_before", "d_embedding",
           "max_len", "causal", "attention_type", "decoder_use_memory"});
  declare(r, "speechbrain.nnet.linear.Linear", {"mamba_asr.Linear"}, "fully connected layer",
          {"n_neurons", "input_shape", "input_size", "bias", "max_norm", "combine_dims"});
  declare(r, "torch.nn.ModuleList", {"mamba_asr.ModuleList"}, "a list of modules", {"modules"});
  declare(r, "torch.nn.LogSoftmax", {"mamba_asr.LogSoftmax"}, "log-softmax", {"dim"});
  // SpeechBrain's LM recipes write `log_softmax: !new:speechbrain.nnet.activations.Softmax
  // {apply_log: True}`; the trainers take log-softmax of the output layer themselves.
  declare(r, "speechbrain.nnet.activations.Softmax", {"mamba_asr.Softmax"},
          "softmax or log-softmax (apply_log)", {"apply_log", "dim", "reshape", "dtype"});
  declare(r, "torch.nn.GELU", {"mamba_asr.GELU"}, "GELU activation", {"approximate"});
  declare(r, "speechbrain.nnet.activations.Swish", {"torch.nn.SiLU", "mamba_asr.Swish"},
          "Swish (SiLU) activation", {"beta"});
  declare(r, "torch.nn.ReLU", {"mamba_asr.ReLU"}, "ReLU activation", {"inplace"});
  declare(r, "torch.nn.Identity", {"mamba_asr.Identity"}, "identity (no activation)", {},
          CallableKind::kClass, /*variadic=*/true);
  declare(r, "torch.nn.LeakyReLU", {"mamba_asr.LeakyReLU"}, "LeakyReLU activation",
          {"negative_slope", "inplace"});

  // ---- optimisation ----
  declare(r, "torch.optim.Adam", {"mamba_asr.Adam"}, "Adam optimizer",
          {"params", "lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize",
           "capturable", "differentiable", "fused"});
  declare(r, "torch.optim.AdamW", {"mamba_asr.AdamW"}, "AdamW optimizer (decoupled weight decay)",
          {"params", "lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize",
           "capturable", "differentiable", "fused"});
  declare(r, "torch.optim.SGD", {"mamba_asr.SGD"}, "SGD optimizer",
          {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize",
           "foreach", "differentiable"});
  declare(r, "speechbrain.nnet.schedulers.NoamScheduler", {"mamba_asr.NoamScheduler"},
          "Noam learning-rate schedule", {"lr_initial", "n_warmup_steps", "model_size"});
  declare(r, "speechbrain.nnet.schedulers.LinearNoamScheduler", {"mamba_asr.LinearNoamScheduler"},
          "linear warm-up, hold, then Noam decay",
          {"lr_initial", "n_warmup_steps", "n_keep_steps"});
  declare(r, "speechbrain.nnet.losses.ctc_loss", {"mamba_asr.ctc_loss"}, "CTC loss",
          {"log_probs", "targets", "input_lens", "target_lens", "blank_index", "reduction"},
          kFunction);
  declare(r, "speechbrain.nnet.losses.kldiv_loss", {"mamba_asr.kldiv_loss"},
          "label-smoothed KL-divergence loss",
          {"log_probabilities", "targets", "length", "label_smoothing", "allowed_len_diff",
           "pad_idx", "reduction"},
          kFunction);
  declare(r, "speechbrain.nnet.losses.nll_loss", {"mamba_asr.nll_loss"}, "negative log-likelihood",
          {"log_probabilities", "targets", "length", "label_smoothing", "allowed_len_diff",
           "weight", "reduction"},
          kFunction);

  // ---- augmentation ----
  declare(r, "speechbrain.augment.time_domain.SpeedPerturb", {"mamba_asr.SpeedPerturb"},
          "speed perturbation by resampling", {"orig_freq", "speeds", "device"});
  // mamba-asr's own (SpeechBrain has no counterpart): lib/audio/pad_silence.h.
  declare(r, "mamba_asr.PadSilence", {}, "random silence before and after training utterances",
          {"max_lead", "max_tail", "prob", "sample_rate"});
  declare(r, "speechbrain.augment.freq_domain.SpectrogramDrop", {"mamba_asr.SpectrogramDrop"},
          "drops chunks of time frames or frequency bins",
          {"drop_length_low", "drop_length_high", "drop_count_low", "drop_count_high", "replace",
           "dim"});
  declare(r, "speechbrain.augment.freq_domain.Warping", {"mamba_asr.Warping"}, "time warping",
          {"warp_window", "warp_mode", "dim"});
  declare(r, "speechbrain.augment.time_domain.DropFreq", {"mamba_asr.DropFreq"},
          "drops frequency bands of the waveform",
          {"drop_freq_low", "drop_freq_high", "drop_freq_count_low", "drop_freq_count_high",
           "drop_freq_width", "epsilon"});
  declare(r, "speechbrain.augment.time_domain.DropChunk", {"mamba_asr.DropChunk"},
          "zeroes chunks of the waveform",
          {"drop_length_low", "drop_length_high", "drop_count_low", "drop_count_high", "drop_start",
           "drop_end", "noise_factor"});
  // AddNoise's noise_funct: `!name:` binds them (AddNoise reads which, and the bound alphas).
  declare(r, "speechbrain.augment.time_domain.pink_noise_like", {"mamba_asr.pink_noise_like"},
          "colored noise shaped as 1/f^alpha (AddNoise's noise_funct)",
          {"waveforms", "alpha_low", "alpha_high", "sample_rate"}, kFunction);
  declare(r, "torch.randn_like", {}, "standard Gaussian noise shaped as its input",
          {"input", "dtype", "layout", "device", "requires_grad", "memory_format"}, kFunction);
  // mamba-asr's own: lib/features/augment/reverb.h.
  declare(r, "mamba_asr.Reverb", {}, "convolves waveforms with generated room responses",
          {"rt60_low", "rt60_high", "drr_low", "drr_high", "sample_rate"});
  // mamba-asr's own: lib/features/augment/vocoder.h.
  declare(r, "mamba_asr.Vocoder", {},
          "resynthesizes waveforms through a source-filter vocoder (cepstral envelope, pulses or "
          "noise), optionally at another pitch",
          {"sample_rate", "order_low", "order_high", "pitch_low", "pitch_high", "noise_low",
           "noise_high", "f0_min", "f0_max", "voicing_threshold"});
  // mamba-asr's own: lib/features/augment/vtlp.h.
  declare(r, "mamba_asr.VTLP", {}, "vocal-tract-length perturbation of log-mel features",
          {"warp_low", "warp_high", "f_hi", "sample_rate", "f_min", "f_max"});
  // mamba-asr's own: lib/features/augment/spectral_smoothing.h.
  declare(r, "mamba_asr.SpectralSmoothing", {},
          "smooths log-mel features in time and liftering (as parametric synthesis does)",
          {"time_width_low", "time_width_high", "keep_low", "keep_high"});
  declare(r, "speechbrain.augment.time_domain.RandAmp", {"mamba_asr.RandAmp"},
          "scales each waveform to a random peak", {"amp_low", "amp_high"});
  declare(r, "speechbrain.augment.time_domain.DoClip", {"mamba_asr.DoClip"},
          "clips the waveforms at a random fraction of their peaks", {"clip_low", "clip_high"});
  declare(r, "speechbrain.augment.time_domain.DropBitResolution", {"mamba_asr.DropBitResolution"},
          "quantizes the waveforms to int16, int8 or float16 and back", {"target_dtype"});
  declare(r, "speechbrain.augment.augmenter.Augmenter", {"mamba_asr.Augmenter"},
          "applies a random subset of augmentations",
          {"parallel_augment", "parallel_augment_fixed_bs", "concat_original", "min_augmentations",
           "max_augmentations", "shuffle_augmentations", "repeat_augment", "augment_start_index",
           "augment_end_index", "concat_start_index", "concat_end_index", "augment_prob",
           "augmentations", "enable_augmentations"});

  // ---- data ----
  // A dataloader's collate_fn: mamba-asr's loader always pads like PaddedBatch, so the entry is
  // accepted and its arguments checked, nothing more.
  declare(r, "speechbrain.dataio.batch.PaddedBatch", {"mamba_asr.PaddedBatch"},
          "pads a list of examples into a batch (what the data loader does anyway)",
          {"examples", "padded_keys", "device_prep_keys", "padding_func", "padding_kwargs",
           "apply_default_convert", "nonpadded_stack"});
  declare(r, "speechbrain.dataio.sampler.DynamicBatchSampler", {"mamba_asr.DynamicBatchSampler"},
          "batches by total duration over length buckets",
          {"dataset", "max_batch_length", "num_buckets", "length_func", "shuffle", "batch_ordering",
           "max_batch_ex", "bucket_boundaries", "lengths_list", "seed", "epoch", "drop_last",
           "verbose"});
  declare(r, "speechbrain.tokenizers.SentencePiece.SentencePiece", {"mamba_asr.Tokenizer"},
          "trains or loads a SentencePiece tokenizer",
          {"model_dir", "vocab_size", "annotation_train", "annotation_read", "model_type",
           "char_format_input", "character_coverage", "user_defined_symbols",
           "max_sentencepiece_length", "bos_id", "eos_id", "pad_id", "unk_id",
           "split_by_whitespace", "num_sequence", "annotation_list_to_check", "annotation_format",
           "text_file", "add_dummy_prefix"});
  declare(r, "sentencepiece.SentencePieceProcessor", {"mamba_asr.SentencePieceProcessor"},
          "a SentencePiece model (loaded by the pretrainer or the trainer)", {"model_file"},
          CallableKind::kClass, /*variadic=*/true);

  // ---- decoding ----
  declare(r, "speechbrain.decoders.scorer.CTCScorer", {"mamba_asr.CTCScorer"},
          "CTC prefix scorer for joint decoding",
          {"ctc_fc", "blank_index", "eos_index", "ctc_window_size"});
  declare(r, "speechbrain.decoders.scorer.TransformerLMScorer", {"mamba_asr.TransformerLMScorer"},
          "Transformer LM shallow fusion", {"language_model", "temperature"});
  declare(r, "speechbrain.decoders.scorer.ScorerBuilder", {"mamba_asr.ScorerBuilder"},
          "weights the scorers of a beam search",
          {"weights", "full_scorers", "partial_scorers", "scorer_beam_scale"});
  declare(
      r, "speechbrain.decoders.seq2seq.S2STransformerBeamSearcher",
      {"speechbrain.decoders.S2STransformerBeamSearcher", "mamba_asr.S2SBeamSearcher"},
      "joint CTC/attention beam search",
      {"modules", "temperature", "bos_index", "eos_index", "min_decode_ratio", "max_decode_ratio",
       "beam_size", "topk", "return_topk", "using_eos_threshold", "eos_threshold",
       "length_normalization", "using_max_attn_shift", "max_attn_shift", "minus_inf", "scorer"});
  declare(r, "speechbrain.decoders.ctc.CTCBeamSearcher",
          {"speechbrain.decoders.CTCBeamSearcher", "mamba_asr.CTCBeamSearcher"},
          "CTC prefix beam search",
          {"blank_index", "vocab_list", "space_token", "kenlm_model_path", "unigrams", "alpha",
           "beta", "unk_score_offset", "score_boundary", "beam_size", "beam_prune_logp",
           "token_prune_min_logp", "prune_history", "blank_skip_threshold", "topk", "spm_token"});

  // ---- training utilities ----
  declare(r, "speechbrain.utils.checkpoints.Checkpointer", {"mamba_asr.Checkpointer"},
          "saves and recovers training state",
          {"checkpoints_dir", "recoverables", "custom_load_hooks", "custom_save_hooks",
           "allow_partial_load"});
  declare(r, "speechbrain.utils.epoch_loop.EpochCounter", {"mamba_asr.EpochCounter"},
          "counts epochs up to a limit", {"limit"});
  declare(r, "speechbrain.utils.train_logger.FileTrainLogger", {"mamba_asr.FileTrainLogger"},
          "writes train_log.txt", {"save_file", "precision"});
  declare(r, "speechbrain.utils.train_logger.WandBLogger", {}, "Weights & Biases logger (unused)",
          {}, CallableKind::kClass, /*variadic=*/true);
  declare(r, "wandb.init", {}, "Weights & Biases initializer (unused)", {}, kFunction,
          /*variadic=*/true);
  declare(r, "speechbrain.utils.metric_stats.ErrorRateStats", {"mamba_asr.ErrorRateStats"},
          "word/character error rate statistics",
          {"merge_tokens", "split_tokens", "space_token", "keep_values", "extract_concepts_values",
           "tag_in", "tag_out", "equality_comparator"});
  declare(r, "speechbrain.utils.Accuracy.AccuracyStats", {"mamba_asr.AccuracyStats"},
          "token accuracy statistics", {});
  declare(r, "speechbrain.utils.parameter_transfer.Pretrainer", {"mamba_asr.Pretrainer"},
          "loads pretrained files into declared objects",
          {"collect_in", "loadables", "paths", "custom_hooks", "conditions"});

  // ---- load-time functions ----
  ClassInfo seed;
  seed.name = "torch.manual_seed";
  seed.aliases = {"mamba_asr.manual_seed"};
  seed.kind = kFunction;
  seed.summary = "seeds the random number generators";
  seed.params = {"seed"};
  seed.required = {"seed"};
  seed.apply = [](const Args& args) {
    record_manual_seed(args.get("seed").as_int());
    return Value();
  };
  r.add(std::move(seed));

  // SpeechBrain >= 1.0.2 recipes: `__set_seed: !apply:speechbrain.utils.seed_everything [N]`
  // (utils/seed.py): a seed outside [0, 2**32 - 1] becomes 0, then every generator is seeded.
  // `deterministic` asks torch for deterministic kernels; mamba-asr's CPU kernels are, and the
  // value is kept for the runtime to read.
  ClassInfo everything;
  everything.name = "speechbrain.utils.seed_everything";
  everything.aliases = {"speechbrain.utils.seed.seed_everything"};
  everything.kind = kFunction;
  everything.summary = "seeds the random number generators (SpeechBrain >= 1.0.2)";
  everything.params = {"seed", "verbose", "deterministic"};
  everything.apply = [](const Args& args) {
    record_manual_seed(seed_everything_value(args.get_int("seed", 0)));
    return Value();
  };
  r.add(std::move(everything));
}

int64_t seed_everything_value(int64_t seed) {
  constexpr int64_t kMaxSeed = 4294967295;  // 2**32 - 1, numpy's bound
  return seed < 0 || seed > kMaxSeed ? 0 : seed;
}

void record_manual_seed(int64_t seed) {
  g_seed = seed;
  g_seed_set = true;
}

std::optional<int64_t> requested_manual_seed() {
  if (!g_seed_set) return std::nullopt;
  return g_seed.load();
}

}  // namespace masr::hparams

// lib/features/augment/vocoder.cpp
// Vocoder: the draws on the CPU generator, the analysis and resynthesis with tensor operations on
// x's device (short-time FFTs; nothing per frame or per sample on the host).
#include "features/augment/vocoder.h"

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"

namespace masr::features {

namespace {

// Frames whose pitch candidates are this close to the highest one count as equal, and the
// shortest lag among them wins (a pulse train's autocorrelation repeats at every multiple of its
// period: the highest peak alone would often be an octave low).
constexpr double kCandidateShare = 0.85;
// A frame more than 40 dB below the utterance's loudest is silence, whatever its periodicity.
constexpr double kSilence = 1e-4;

at::Tensor hann(int64_t n, const at::TensorOptions& options) {
  return torch::hann_window(n, /*periodic=*/true, options);
}

at::Tensor stft(const at::Tensor& x, int64_t n_fft, int64_t hop, int64_t window,
                const at::Tensor& w) {
  return at::stft(x, n_fft, hop, window, w, /*center=*/true, "constant", /*normalized=*/false,
                  /*onesided=*/true, /*return_complex=*/true);
}

}  // namespace

void VocoderConfig::validate() const {
  if (!(sample_rate >= 4000.0)) {
    throw_config_error(
        string_printf("Vocoder: sample_rate must be >= 4000 Hz, got %g", sample_rate));
  }
  if (order_low < 2 || order_low > order_high) {
    throw_config_error(string_printf(
        "Vocoder: need 2 <= order_low <= order_high (cepstral coefficients), got %lld and %lld",
        static_cast<long long>(order_low), static_cast<long long>(order_high)));
  }
  if (!(pitch_low > 0.0) || !(pitch_low <= pitch_high) || pitch_high > 4.0) {
    throw_config_error(string_printf(
        "Vocoder: need 0 < pitch_low <= pitch_high <= 4 (pitch factors), got %g and %g", pitch_low,
        pitch_high));
  }
  if (!(noise_low >= 0.0) || !(noise_low <= noise_high) || noise_high > 1.0) {
    throw_config_error(string_printf(
        "Vocoder: need 0 <= noise_low <= noise_high <= 1 (noise share), got %g and %g", noise_low,
        noise_high));
  }
  if (!(voicing_threshold > 0.0 && voicing_threshold < 1.0)) {
    throw_config_error(
        string_printf("Vocoder: voicing_threshold must be in (0, 1), got %g", voicing_threshold));
  }
  // The longest period must fit in the analysis window (32 ms), the shortest be 2 samples.
  if (!(f0_min >= 1.0 / 0.032 + 1.0) || !(f0_min < f0_max) || !(f0_max <= sample_rate / 4.0)) {
    throw_config_error(
        string_printf("Vocoder: need %g < f0_min < f0_max <= sample_rate / 4 (Hz), got %g and %g",
                      1.0 / 0.032 + 1.0, f0_min, f0_max));
  }
}

Vocoder::Vocoder(VocoderConfig config) : config_(config) {
  config_.validate();
  window_ = static_cast<int64_t>(std::lround(0.032 * config_.sample_rate));
  hop_ = std::max<int64_t>(1, std::lround(0.005 * config_.sample_rate));
  n_fft_ = 1;
  while (n_fft_ < window_) n_fft_ <<= 1;
  if (config_.order_high > n_fft_ / 2) {
    throw_config_error(string_printf(
        "Vocoder: order_high (%lld) must be at most %lld, half the analysis FFT at %g Hz",
        static_cast<long long>(config_.order_high), static_cast<long long>(n_fft_ / 2),
        config_.sample_rate));
  }
}

std::string Vocoder::summary() const {
  return string_printf(
      "cepstral order [%lld, %lld], pitch x[%g, %g), noise in voiced frames [%g, %g), "
      "f0 %g-%g Hz",
      static_cast<long long>(config_.order_low), static_cast<long long>(config_.order_high),
      config_.pitch_low, config_.pitch_high, config_.noise_low, config_.noise_high, config_.f0_min,
      config_.f0_max);
}

Vocoder::Analysis Vocoder::analyze(const at::Tensor& x, const at::Tensor& valid,
                                   const at::Tensor& order) const {
  const auto options = x.options();
  const at::Tensor w = hann(window_, options);
  // One transform serves both: each window zero-padded to twice the FFT (the autocorrelation
  // below must not wrap around), whose even bins have the magnitudes of the n_fft-point
  // transform of the same window (zero-padding interpolates between them).
  const int64_t n_long = 2 * n_fft_;
  const at::Tensor power = stft(x, n_long, hop_, window_, w).abs().pow(2);  // (B, n_long/2+1, M)
  const int64_t frames = power.size(2);

  // Envelope: the log magnitude's real cepstrum, coefficients 0..order-1 (and their mirror) kept.
  const at::Tensor log_magnitude =
      0.5 * torch::log(power.slice(1, 0, power.size(1), 2) + 1e-10);        // (B, n_fft/2+1, M)
  const at::Tensor cepstrum = torch::fft::irfft(log_magnitude, n_fft_, 1);  // (B, n_fft, M)
  const at::Tensor q = torch::arange(n_fft_, options.dtype(torch::kLong)).unsqueeze(0);
  const at::Tensor keep = order.to(x.device()).unsqueeze(1);
  const at::Tensor lifter = ((q < keep) | (q > n_fft_ - keep)).to(x.scalar_type()).unsqueeze(2);
  const at::Tensor log_envelope = torch::real(torch::fft::rfft(cepstrum * lifter, n_fft_, 1));

  // Pitch: the autocorrelation of each windowed frame, normalized and divided by the window's
  // own, searched over the lags of [f0_max, f0_min].
  const at::Tensor autocorrelation =
      torch::fft::irfft(power.to(c10::kComplexFloat), n_long, 1);  // (B, n_long, M)
  const at::Tensor w_autocorrelation =
      torch::fft::irfft(torch::fft::rfft(torch::constant_pad_nd(w, {0, n_long - window_}), n_long)
                            .abs()
                            .pow(2)
                            .to(c10::kComplexFloat),
                        n_long);
  const int64_t lag_min = static_cast<int64_t>(std::floor(config_.sample_rate / config_.f0_max));
  const int64_t lag_max = static_cast<int64_t>(std::ceil(config_.sample_rate / config_.f0_min));
  // Lags lag_min - 1 .. lag_max + 1, for the neighbours of the local maxima.
  const int64_t span = lag_max - lag_min + 3;
  const at::Tensor energy = autocorrelation.select(1, 0);  // (B, M)
  const at::Tensor r =
      autocorrelation.narrow(1, lag_min - 1, span) / energy.clamp_min(1e-20).unsqueeze(1) /
      (w_autocorrelation.narrow(0, lag_min - 1, span) / w_autocorrelation[0]).view({1, span, 1});
  const at::Tensor inner = r.narrow(1, 1, span - 2);
  const at::Tensor peak = (inner >= r.narrow(1, 0, span - 2)) & (inner >= r.narrow(1, 2, span - 2));
  const at::Tensor highest = std::get<0>((inner * peak.to(inner.scalar_type())).max(1));  // (B, M)
  const at::Tensor candidate = peak & (inner >= kCandidateShare * highest.unsqueeze(1));
  // argmax gives the first of equal maxima: the shortest candidate lag.
  const at::Tensor first = candidate.to(torch::kInt).argmax(1);  // (B, M), index into inner
  const at::Tensor y1 = inner.gather(1, first.unsqueeze(1)).squeeze(1);
  const at::Tensor y0 = r.gather(1, first.unsqueeze(1)).squeeze(1);
  const at::Tensor y2 = r.gather(1, (first + 2).unsqueeze(1)).squeeze(1);
  const at::Tensor curvature = y0 - 2 * y1 + y2;
  const at::Tensor delta =
      torch::where(curvature < 0, 0.5 * (y0 - y2) / curvature.clamp_max(-1e-12),
                   torch::zeros_like(curvature))
          .clamp(-0.5, 0.5);
  const at::Tensor lag = first.to(x.scalar_type()) + lag_min + delta;

  // Voiced: periodic enough, and not silence. Frames centred past an utterance's end are
  // unvoiced (their envelope comes from padding).
  const at::Tensor m = torch::arange(frames, options.dtype(torch::kLong)).unsqueeze(0);
  const at::Tensor inside = (m * hop_) < valid.to(x.device()).unsqueeze(1);
  const at::Tensor loudest =
      std::get<0>((energy * inside.to(energy.scalar_type())).max(1, /*keepdim=*/true));
  const at::Tensor voiced =
      (y1 > config_.voicing_threshold) & (energy > kSilence * loudest) & inside;
  const at::Tensor f0 = torch::where(voiced, config_.sample_rate / lag, torch::zeros_like(lag));
  return {log_envelope, f0};
}

at::Tensor Vocoder::synthesize(const Analysis& analysis, const at::Tensor& pitch,
                               const at::Tensor& share, const at::Tensor& noise) const {
  const auto options = noise.options();
  const int64_t t = noise.size(1);
  const int64_t frames = analysis.f0.size(1);
  // The frame of each sample: frames are centred on multiples of the hop.
  const at::Tensor n = torch::arange(t, options.dtype(torch::kLong));
  const at::Tensor index = torch::div(n + hop_ / 2, hop_, "floor")
                               .clamp_max(frames - 1)
                               .unsqueeze(0)
                               .expand({noise.size(0), t});
  const at::Tensor f0 = analysis.f0.gather(1, index);  // (B, T), 0 where unvoiced
  const at::Tensor voiced = f0 > 0;
  // Pulses where the accumulated phase (cycles, in double: hours of samples) passes a whole
  // number; unvoiced stretches advance it at 100 Hz, which nothing hears.
  const at::Tensor rate =
      torch::where(voiced, f0 * pitch.to(options).unsqueeze(1), torch::full_like(f0, 100.0));
  const at::Tensor increment = (rate / config_.sample_rate).to(torch::kDouble);
  const at::Tensor phase = torch::cumsum(increment, 1);
  const at::Tensor pulse =
      (torch::floor(phase) > torch::floor(phase - increment)).to(options.dtype());
  // Amplitude sqrt(period): a pulse train of unit power, as the noise.
  const at::Tensor pulses = pulse * torch::sqrt(config_.sample_rate / rate);
  const at::Tensor a = share.to(options).unsqueeze(1);
  const at::Tensor source =
      torch::where(voiced, torch::sqrt(1 - a) * pulses + torch::sqrt(a) * noise, noise);

  const at::Tensor w = hann(window_, options);
  const at::Tensor excitation = stft(source, n_fft_, hop_, window_, w);
  // A unit-power source has sum(w^2) of expected power per bin: divided out, the envelope alone
  // sets the output's level.
  // sum(w^2) of a periodic Hann window of N points is 3N/8 (computed, not read back from x's
  // device: a training step does not wait for the GPU).
  const at::Tensor shaped = excitation * torch::exp(analysis.log_envelope) /
                            std::sqrt(3.0 * static_cast<double>(window_) / 8.0);
  return at::istft(shaped, n_fft_, hop_, window_, w, /*center=*/true, /*normalized=*/false,
                   /*onesided=*/true, t, /*return_complex=*/false);
}

AugmentBatch Vocoder::apply(const at::Tensor& x, const at::Tensor& lengths,
                            at::Generator& generator) const {
  require_waveforms(x, "Vocoder");
  const int64_t batch = x.size(0), t = x.size(1);
  const auto cpu = torch::TensorOptions().dtype(torch::kFloat);
  const at::Tensor order = torch::randint(config_.order_low, config_.order_high + 1, {batch},
                                          generator, cpu.dtype(torch::kLong));
  const at::Tensor pitch =
      torch::rand({batch}, generator, cpu) * (config_.pitch_high - config_.pitch_low) +
      config_.pitch_low;
  const at::Tensor share =
      torch::rand({batch}, generator, cpu) * (config_.noise_high - config_.noise_low) +
      config_.noise_low;
  const at::Tensor noise = torch::randn({batch, t}, generator, cpu);

  const at::Device device = x.device();
  const at::Tensor valid_host =
      (lengths.to(torch::kDouble) * t).round().clamp_min(1).to(torch::kLong);
  const at::Tensor valid = runtime::to_device_async(valid_host, device);
  const at::Tensor input = x.to(torch::kFloat);
  const Analysis analysis = analyze(input, valid, runtime::to_device_async(order, device));
  at::Tensor y =
      synthesize(analysis, runtime::to_device_async(pitch, device),
                 runtime::to_device_async(share, device), runtime::to_device_async(noise, device));
  // Zeros past each utterance's end, and its RMS over the valid samples.
  const at::Tensor mask =
      (torch::arange(t, input.options().dtype(torch::kLong)).unsqueeze(0) < valid.unsqueeze(1))
          .to(input.scalar_type());
  y = y * mask;
  const at::Tensor count = valid.to(input.scalar_type()).unsqueeze(1);
  y = y * (valid_rms(input * mask, count) / valid_rms(y, count).clamp_min(1e-12));
  return {y.to(x.scalar_type()), lengths, {}};
}

}  // namespace masr::features

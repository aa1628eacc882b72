// lib/toolkit/features_bench.cpp
// The "features" benchmark: SpeechBrain Fbank (80 mels) on 10 s of 16 kHz audio, batch 1 and 16,
// with the rfft and the matmul STFT.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "features/fbank.h"
#include "runtime/benchmark.h"
#include "toolkit/benchmarks.h"

namespace masr::toolkit {

void register_features_bench() {
  using features::StftMethod;
  runtime::register_benchmark(
      {"features",
       "SpeechBrain Fbank (80 mels, 400/25 ms/10 ms) on 10 s of 16 kHz audio, batch 1 and 16",
       [](const runtime::BenchSettings& settings) {
         std::vector<runtime::BenchResult> results;
         for (StftMethod method : {StftMethod::kRfft, StftMethod::kMatmul}) {
           features::FbankConfig config;
           config.n_mels = 80;
           config.method = method;
           const features::Fbank fbank(config);
           for (int64_t batch : {1, 16}) {
             const at::Tensor wav = at::randn({batch, 160000}) * 0.1;
             const std::string method_name = method == StftMethod::kRfft ? "rfft" : "matmul";
             auto r = runtime::measure("fbank/" + method_name + "/b" + std::to_string(batch),
                                       settings, [&] { (void)fbank(wav); });
             r.work = 10.0 * static_cast<double>(batch);
             r.work_unit = "audio-s";
             r.note = "(" + std::to_string(batch) + ", 160000) float32, " +
                      std::to_string(at::get_num_threads()) + " threads";
             results.push_back(std::move(r));
           }
         }
         return results;
       }});
}

}  // namespace masr::toolkit

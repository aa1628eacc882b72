// tests/train/test_batch_shapes.cpp
// AsrTrainTask::batch_shapes (the shapes CUDA-graph training captures ahead of an epoch's
// batches) against the model inputs the epoch's batches really give: the tiny CTC recipe with its
// speed perturbation, on the shape grid and off it, over three epochs.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "hparams/hparams.h"
#include "toolkit/registration.h"
#include "train/asr_train_task.h"
#include "train/cuda_graph_step.h"
#include "train/data_parallel.h"
#include "train/train_config.h"
#include "train/train_data.h"
#include "train_fixtures.h"

namespace masr {
namespace {

TEST_CASE("batch_shapes tells each batch's model-input shapes before it is loaded", "[train]") {
  toolkit::register_all();
  testing::TempDir dir("batch_shapes");
  testing::write_synth_corpus(dir.file("corpus"));
  hparams::LoadOptions options;
  options.overrides = {{"data_folder", dir.file("corpus")},
                       {"output_folder", dir.file("out")},
                       {"train_csv", dir.file("corpus") + "/train.csv"},
                       {"valid_csv", dir.file("corpus") + "/valid.csv"},
                       {"max_batch_length_train", "4"}};
  options.placeholder_value = "unused";
  const hparams::Hparams hp =
      hparams::load_file(std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml", options);
  REQUIRE(hp.find("speed_perturb") != nullptr);  // lengths as trained differ from the manifest's
  for (const bool grid : {false, true}) {
    INFO("shape grid " << grid);
    train::TrainConfig config = train::train_config_from(hp);
    config.recurring_shapes = grid;
    config.num_workers = 0;
    train::AsrTrainTask task;
    task.load(train::TaskContext{&hp, &config, std::make_shared<train::DataParallel>(), at::kCPU});
    task.set_training(true);
    int64_t compared = 0;
    for (int64_t epoch = 1; epoch <= 3; ++epoch) {
      const auto plan = train::epoch_batches(task.train_set(), config.train_batching, epoch);
      const auto told = task.batch_shapes(plan, epoch);
      REQUIRE(told.size() == plan.size());
      const auto batches = task.open_epoch(epoch, plan);
      for (size_t i = 0; batches->next(); ++i) {
        std::vector<at::Tensor> inputs;
        std::function<at::Tensor(const std::vector<at::Tensor>&)> loss_fn;
        REQUIRE(batches->split_loss(i, 0, nullptr, &inputs, &loss_fn));
        INFO("epoch " << epoch << ", batch " << i);
        CHECK((train::specs_of(inputs) == told[i]));
        ++compared;
      }
    }
    CHECK(compared > 10);
  }
}

}  // namespace
}  // namespace masr

// lib/train/cuda_graph_step.h
// The model part of a training step (CNN, encoder, decoder, losses and their backward) replayed
// as a CUDA graph. Launching it op by op costs the host about 30 µs per kernel, and ConMamba-L
// S2S launches some 4,000 per step: on an H200 the host, not the GPU, sets the pace of a step
// (bench/results/2026-11-28-shape-grid.md: 102 ms of GPU work in a 127-137 ms step). A graph
// launches the same kernels in one call.
//
// One graph per set of input shapes (the collate pads batches to a grid of recurring shapes,
// data::grid_length), captured when a batch of that shape comes and none exists, and replayed
// after that. A capture costs about a step op by op (more than a replay), and in one epoch of an
// 84 h corpus the grid gave 172 shapes in 649 batches, so captures from the first batch ate the
// gain (bench/results/2026-11-28-h200-cuda-graphs.md). So training captures nothing in a run's
// first epoch, which only counts shapes; at the start of the second, every shape seen so far is
// captured at once, before its first batch (on every rank at the same step, with the shapes of
// every rank: captures spread over an epoch would each stall the other ranks at the all-reduce),
// and a shape new after that is captured when it comes (MASR_CUDA_GRAPHS=1: captures from the
// first batch). Once graphs are held, a batch of a shape none holds may instead be padded into a
// held graph's shape (replayable_shapes, below: AsrTrainTask pads with at most 6 % more frames).
// Graphs live as long as the run. They share one memory pool and one set of input
// buffers (as large as the largest batch so far) and loss scalar: graphs replay one at a time,
// and nothing a replay leaves in the pool is read by another, so a graph costs little beyond
// its nodes. Gradients accumulate into flat buffers, one per parameter dtype, of which every
// parameter's .grad is a view: data parallelism averages them in one all-reduce each (after the
// backward, not overlapped with it).
//
// With an `update` (OptimizerStepper::graph_update: no gradient accumulation), the graph holds
// the whole step: forward, backward, clipping and the optimizer's update, and the gradients live
// only inside it. With several ranks it holds their all-reduces too: the data-parallel gradient
// buckets (gradient_buckets.h) are armed before the backward, each bucket's all-reduce is
// launched (captured: NCCL kernels on the process group's stream, joined back before the graph
// ends) as soon as the backward has filled it, so the reduction overlaps the rest of the
// backward on replay as it does op by op; every graph issues the same collectives (one per
// bucket, then the used-parameter flags) in the same order, as every step op by op does, so
// ranks replaying graphs of different shapes, or one rank stepping op by op, stay matched
// (MASR_GRAPH_ALLREDUCE=1; OptimizerStepper::graph_update). One process has no flat buffers then:
// gradients are made by the backward, in the graph's pool, where the next step's forward reuses
// their memory, so a step's peak memory is what it is op by op (the flat buffers held 439 MiB for
// ConMamba-L for the whole run: bench/results/2026-11-28-h200-cuda-graphs.md); several ranks keep
// the buckets' flat buffers besides. MASR_GRAPH_OPTIMIZER=0: the optimizer
// outside the graph (an A/B switch).
//
// What the graph captures must depend on the shapes alone: the inputs (AsrTask::ModelInputs)
// carry every value of the batch, parameters are updated in place (every optimizer here does),
// dropout draws from LibTorch's CUDA generator (graph-safe), and nothing in it goes through the
// host (runtime::to_device_async refuses during a capture). Features, normalization and
// augmentation run eagerly before it. Off with MASR_CUDA_GRAPHS=0 (MASR_CUDA_GRAPHS=split: the
// same split step and gradient buffers without capturing, on any device, which the CPU tests
// use); at most MASR_CUDA_GRAPHS_MAX graphs (default 256), the one seen least often dropped
// beyond that.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace masr::train {

// One input of a step: what a graph is specific to.
struct InputSpec {
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::kFloat;
  bool operator==(const InputSpec& o) const { return sizes == o.sizes && dtype == o.dtype; }
  bool operator!=(const InputSpec& o) const { return !(*this == o); }
};
// The shapes and dtypes of `tensors`.
std::vector<InputSpec> specs_of(const std::vector<at::Tensor>& tensors);
// Inputs of the given shapes, on `device`, with values a step can run on (lengths and indices in
// range): what captures run with when no batch of a shape is at hand.
using InputsLike =
    std::function<std::vector<at::Tensor>(const std::vector<InputSpec>&, const at::Device&)>;

struct GraphStats {
  int64_t eager = 0;     // batches run op by op (capturing off, or graphs off)
  int64_t captured = 0;  // graphs captured (each then replayed for its batch)
  int64_t replayed = 0;  // batches replayed from an earlier capture
  int64_t dropped = 0;   // graphs dropped (the MASR_CUDA_GRAPHS_MAX limit, a larger batch)
  int64_t graphs = 0;    // graphs held now
  int64_t shapes = 0;    // distinct sets of input shapes seen (CUDA builds)
  int64_t padded = 0;    // batches padded into a held graph's shape (note_padded)
  std::string to_string() const;
};

class GraphedSteps {
 public:
  using LossFn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;
  // The optimizer's side of a step, inside it (OptimizerStepper::graph_update): `apply` follows
  // the backward (the gradients' average over the ranks, clipping, the update from the
  // parameters' .grad) and `before_backward`, when set, precedes it (arming the data-parallel
  // gradient buckets, whose all-reduces the backward then launches as they fill). Neither may
  // depend on anything the host changes between steps except device tensors.
  struct Update {
    std::function<void()> before_backward;
    std::function<void()> apply;
    explicit operator bool() const { return static_cast<bool>(apply); }
  };

  // Whether this build can capture on `device` (LibTorch 2 with CUDA, a CUDA device) and
  // MASR_CUDA_GRAPHS is not 0.
  static bool supported(const at::Device& device);
  // MASR_CUDA_GRAPHS=split: the split step without capture wherever graphs are not supported.
  static bool split_requested();

  // `parameters`: those that train (the gradients of the others are not taken). `capture`:
  // capture graphs (false: every batch eagerly, the same accumulation; CPU tests use that).
  // `update`: the whole step in the graph (above), gradients only inside it; without one, they
  // accumulate into the flat buffers.
  GraphedSteps(std::vector<at::Tensor> parameters, bool capture, Update update = {});
  ~GraphedSteps();
  GraphedSteps(const GraphedSteps&) = delete;
  GraphedSteps& operator=(const GraphedSteps&) = delete;

  // loss_fn(inputs), and the gradients of loss / divisor (every one NaN unless the loss is
  // finite: OptimizerStepper's rule) added to the parameters' gradients. `first`: the first
  // batch of an accumulation: the gradients start from zero (and .grad is set to the views
  // again, after an optimizer's zero_grad dropped them). With an update, the update follows
  // and the parameters are left without gradients (`first` must be true, `divisor` 1).
  // Returns the loss, detached.
  // loss_fn must be a function of the inputs' values and shapes alone (see above).
  // `inputs` are taken (by value: move them in, and a capture or replay does not hold them
  // beside its own copy).
  at::Tensor forward_backward(std::vector<at::Tensor> inputs, const LossFn& loss_fn, double scale,
                              bool first);

  // While off (a run's first epoch, by default), shapes are only counted and every batch runs
  // eagerly. Turned on, the next batch first captures a graph for every shape seen so far (from
  // placeholder inputs, set_inputs_like); a shape new after that is captured when it comes.
  void set_capturing(bool on);
  // What the captures at set_capturing(true) run with (AsrTask::inputs_like); without it,
  // no shape is captured before its second batch.
  void set_inputs_like(InputsLike like);
  // The shapes seen so far, as opaque keys; add_shape_keys adds those other ranks saw, so that
  // set_capturing(true) captures them too (a rank sees 1/N of an epoch's batches: alone it
  // would meet many shapes first in a later epoch, and each such batch runs op by op, or is
  // captured, while the other ranks wait).
  std::vector<std::string> shape_keys() const;
  void add_shape_keys(const std::vector<std::string>& keys);
  // Every shape key seen, with the batches of it so far (CUDA builds; empty elsewhere).
  std::vector<std::pair<std::string, int64_t>> shape_counts() const;
  // Padding a batch into a held graph's shape. A shape met for the first time once capturing is
  // on costs a capture (1.6-2.6 times a replayed step on H200s, and with several ranks every other
  // rank waits for it); the same batch padded a little further, into a shape a graph holds, costs
  // a replay of a few percent more work. A task that can pad its batches (AsrTrainTask: audio with
  // zeros, transcripts with the pad token, exactly the padding a coarser grid would have given)
  // asks replays() for its batch's shape, and if not, pads into one of replayable_shapes() and
  // calls note_padded(): a shape that keeps coming (times_seen) then gets its own graph.
  // The shapes of the graphs held now, and of those the pending capture of the shapes seen so far
  // will make (set_capturing), at the divisor of the last step; none while capturing is off or
  // in builds that do not capture.
  std::vector<std::vector<InputSpec>> replayable_shapes() const;
  // Whether a batch of `specs` would replay a graph (at the last step's divisor).
  bool replays(const std::vector<InputSpec>& specs) const;
  // Batches of `specs` so far: run as that shape, or padded into another (note_padded).
  int64_t times_seen(const std::vector<InputSpec>& specs) const;
  void note_padded(const std::vector<InputSpec>& specs);
  // MASR_GRAPH_PAD=0: never pad (each new shape is captured when it comes); an A/B switch.
  static bool pads_new_shapes();
  // Graphs for `shapes` (batches a task knows are coming, with no graph and no held shape to
  // pad into) captured with the next step's, before its batch, as set_capturing(true) captures
  // the shapes seen so far: with several ranks, every rank's captures of an epoch at its start,
  // at once, rather than each stalling the other ranks when its batch comes. Nothing while
  // capturing is off, before the first step (the divisor is not known) or off CUDA.
  void capture_ahead(const std::vector<std::vector<InputSpec>>& shapes);
  // MASR_GRAPH_AHEAD=0: no captures ahead (TrainLoop); an A/B switch.
  static bool captures_ahead();

  // A shape key's divisor and input shapes back (false if `key` is not one).
  static bool parse_shape_key(const std::string& key, double* divisor,
                              std::vector<InputSpec>* specs);
  // Whether set_capturing(true) captures the shapes seen so far (MASR_GRAPH_PRECAPTURE=0: no,
  // each is captured when it next comes; an A/B switch).
  static bool captures_seen_shapes();
  // MASR_CUDA_GRAPHS=1: capture from a run's first batch rather than from its second epoch.
  static bool capture_from_start();

  // The flat gradient buffers (one per parameter dtype) that the .grad views cover; none with
  // an update.
  const std::vector<at::Tensor>& flats() const;
  // Whether the optimizer's update is part of the step (an update was given).
  bool steps_optimizer() const;
  GraphStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace masr::train

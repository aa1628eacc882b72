// lib/train/cuda_graph_step.cpp
// Eager accumulation everywhere; capture and replay with LibTorch 2's at::cuda::CUDAGraph in
// CUDA builds (the header says what a graph may hold).
#include "train/cuda_graph_step.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"
#include "runtime/peak_memory.h"
#include "train/optimizer_stepper.h"
#include "train/step_profile.h"

#if defined(MASR_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
#define MASR_GRAPH_CAPTURE 1
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/accumulate.h>
#include <cuda_runtime_api.h>
#endif

namespace masr::train {
namespace {

// MASR_CUDA_GRAPHS: "0", "1", "split", or empty when unset.
std::string graphs_setting() {
  const char* v = std::getenv("MASR_CUDA_GRAPHS");
  return v != nullptr ? v : "";
}

// MASR_GRAPH_PRECAPTURE=0: no captures of the shapes seen so far when capturing starts (each
// shape is then captured when it next comes); an A/B switch.
bool precapture_from_env() { return !env_is("MASR_GRAPH_PRECAPTURE", "0"); }

size_t max_graphs_from_env() {
  const char* v = std::getenv("MASR_CUDA_GRAPHS_MAX");
  if (v == nullptr || *v == '\0') return 256;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1) {
    throw_config_error(std::string("MASR_CUDA_GRAPHS_MAX='") + v +
                       "': expected a whole number of graphs, 1 or more");
  }
  return static_cast<size_t>(n);
}

// key_of's divisor and shapes back (false if `key` is not one).
bool parse_key(const std::string& key, double* divisor, std::vector<InputSpec>* specs) {
  static const at::ScalarType kTypes[] = {at::kFloat, at::kDouble, at::kHalf,  at::kBFloat16,
                                          at::kLong,  at::kInt,    at::kShort, at::kChar,
                                          at::kByte,  at::kBool};
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t bar; (bar = key.find('|', from)) != std::string::npos; from = bar + 1) {
    parts.push_back(key.substr(from, bar - from));
  }
  parts.push_back(key.substr(from));
  if (parts.size() < 2 || parts[0].size() < 2 || parts[0][0] != '/') return false;
  char* end = nullptr;
  *divisor = std::strtod(parts[0].c_str() + 1, &end);
  if (*end != '\0') return false;
  specs->clear();
  for (size_t i = 1; i < parts.size(); ++i) {
    InputSpec spec;
    const std::string& part = parts[i];
    const size_t comma = std::min(part.find(','), part.size());
    const std::string type = part.substr(0, comma);
    bool known = false;
    for (const at::ScalarType t : kTypes) {
      if (type == c10::toString(t)) {
        spec.dtype = t;
        known = true;
      }
    }
    if (!known) return false;
    for (size_t pos = comma; pos < part.size();) {
      const size_t next = std::min(part.find(',', pos + 1), part.size());
      const std::string digits = part.substr(pos + 1, next - pos - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      spec.sizes.push_back(std::stoll(digits));
      pos = next;
    }
    specs->push_back(std::move(spec));
  }
  return true;
}

#ifdef MASR_GRAPH_CAPTURE
// The shapes and dtypes of the inputs, and the divisor: what a graph is specific to.
std::string key_of(const std::vector<InputSpec>& specs, double divisor) {
  std::string key = string_printf("/%a", divisor);
  for (const InputSpec& spec : specs) {
    key += '|';
    key += c10::toString(spec.dtype);
    for (const int64_t s : spec.sizes) key += ',' + std::to_string(s);
  }
  return key;
}

// The autocast cache would keep bf16 copies of the weights made during a capture, in the
// graph's pool, and hand them to the next step's eager work: torch.cuda.graphs asks for
// cache_enabled=False under autocast for the same reason.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : previous_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(previous_); }

 private:
  bool previous_;
};
#endif

}  // namespace

std::vector<InputSpec> specs_of(const std::vector<at::Tensor>& tensors) {
  std::vector<InputSpec> specs;
  for (const at::Tensor& t : tensors) specs.push_back({t.sizes().vec(), t.scalar_type()});
  return specs;
}

std::string GraphStats::to_string() const {
  return string_printf(
      "CUDA graphs: %lld batches replayed, %lld captured, %lld eager; %lld batch shapes, "
      "%lld graphs held, %lld dropped; %lld batches padded into a held graph's shape",
      static_cast<long long>(replayed), static_cast<long long>(captured),
      static_cast<long long>(eager), static_cast<long long>(shapes), static_cast<long long>(graphs),
      static_cast<long long>(dropped), static_cast<long long>(padded));
}

struct GraphedSteps::Impl {
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> views;  // each parameter's gradient in its flat buffer
  std::vector<bool> used;         // parameters that have had a gradient
  std::vector<at::Tensor> flats;
  Update update;          // the optimizer's update, inside the step (no flats then)
  bool capture = false;   // a capturing build and device
  bool capturing = true;  // set_capturing
  size_t max_graphs = 64;
  GraphStats stats;

  void attach(size_t i) {
    at::Tensor& grad = params[i].mutable_grad();
    if (!grad.defined() || !grad.is_same(views[i])) grad = views[i];
  }

  // The loss and the backward, op by op; with `add`, the gradients are added to the views,
  // else only computed (and dropped). Returns the loss, detached.
  at::Tensor run(const std::vector<at::Tensor>& inputs, const LossFn& fn, double divisor,
                 bool add) {
    const int cuda = inputs.front().is_cuda() ? inputs.front().device().index() : -1;
    runtime::memory_point(cuda, "step start");
    const at::Tensor loss = fn(inputs);
    runtime::memory_point(cuda, "forward");
    profile_phase("backward");
    const at::Tensor target = with_nan_gradients_unless_finite(loss) / divisor;
    if (!add) {
      (void)torch::autograd::grad({target}, params, {}, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true);
      return loss.detach();
    }
    if (update) {
      // The gradients as the backward makes them, used by the update and dropped: inside a
      // capture their memory goes back to the graph's pool, for the next step's activations.
      if (update.before_backward) update.before_backward();
      target.backward();
      runtime::memory_point(cuda, "backward");
      update.apply();
      for (at::Tensor& p : params) p.mutable_grad().reset();
      runtime::memory_point(cuda, "update");
      return loss.detach();
    }
    // Autograd adds each gradient in place into a defined .grad (our view) as it comes, so no
    // step holds all its gradients twice. A parameter without one (its first gradient) gets a
    // tensor of its own, which goes into its view here; one whose view was replaced rather than
    // added to (out of place) holds the whole sum, which replaces the view's contents.
    target.backward();
    runtime::memory_point(cuda, "backward");
    for (size_t i = 0; i < params.size(); ++i) {
      const at::Tensor& grad = params[i].grad();
      if (!grad.defined() || grad.is_same(views[i])) continue;
      if (used[i]) {
        views[i].copy_(grad);
      } else {
        views[i].add_(grad);
        used[i] = true;
      }
      attach(i);
    }
    return loss.detach();
  }

#ifdef MASR_GRAPH_CAPTURE
  struct Entry {
    int64_t seen = 0;    // batches run as this shape
    int64_t padded = 0;  // batches of this shape padded into another (note_padded)
    bool ahead = false;  // asked for by capture_ahead
    uint64_t last_use = 0;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    std::vector<InputSpec> specs;  // the inputs' shapes (from the key)
    double divisor = 1.0;
  };
  std::map<std::string, Entry> entries;
  // Every graph reads its inputs from the same buffers (one per input, as large as the largest
  // batch so far) and writes its loss into one scalar: graphs replay one at a time, so they can
  // share them, and a graph costs little memory beyond its nodes. A batch larger than a buffer
  // makes new buffers, which drops every graph.
  std::vector<at::Tensor> arena;
  at::Tensor loss_out;
  std::optional<c10::cuda::CUDAStream> stream;     // every capture's
  decltype(at::cuda::graph_pool_handle()) pool{};  // shared while any graph is held
  bool warmed = false;                             // a first eager step ran on the capture stream
  bool capture_seen = false;  // set_capturing turned capturing on: capture the shapes seen so far
  InputsLike inputs_like;     // set_inputs_like
  bool broken = false;        // a capture failed: eager from then on
  uint64_t clock = 0;
  std::optional<double> last_divisor;  // the divisor of the last graphed step

  // Whether a capture of the shapes seen so far takes e: not a shape only ever padded into
  // another (it rides on its neighbour's graph until it keeps coming).
  static bool wanted(const Entry& e) { return e.seen > 0 || e.ahead || e.padded == 0; }
  // Whether the next graphed step replays e (its graph is held, or the pending capture of the
  // shapes seen so far makes one: that capture takes every wanted entry, as the limit allows).
  bool will_replay(const Entry& e) const {
    return capturing && !broken && (e.graph || (capture_seen && inputs_like && wanted(e)));
  }

  void drop(Entry& e) {
    e.graph.reset();
    --stats.graphs;
    ++stats.dropped;
  }

  // Room for one more graph: the one seen least often goes (the least recently used of those).
  void make_room() {
    while (static_cast<size_t>(stats.graphs) >= max_graphs) {
      Entry* victim = nullptr;
      for (auto& [key, e] : entries) {
        if (!e.graph) continue;
        if (victim == nullptr || e.seen < victim->seen ||
            (e.seen == victim->seen && e.last_use < victim->last_use)) {
          victim = &e;
        }
      }
      if (victim == nullptr) return;
      drop(*victim);
    }
  }

  // The arena's views shaped as `inputs` (the buffers grown first where they are too small).
  std::vector<at::Tensor> views_for(const std::vector<at::Tensor>& inputs) {
    bool grow = arena.size() != inputs.size();
    for (size_t i = 0; !grow && i < inputs.size(); ++i) {
      grow =
          arena[i].scalar_type() != inputs[i].scalar_type() || arena[i].numel() < inputs[i].numel();
    }
    if (grow) {
      for (auto& [key, e] : entries) {
        if (e.graph) drop(e);
      }
      std::vector<at::Tensor> bigger;
      for (size_t i = 0; i < inputs.size(); ++i) {
        int64_t n = inputs[i].numel() + inputs[i].numel() / 4;  // a quarter to spare
        if (i < arena.size() && arena[i].scalar_type() == inputs[i].scalar_type()) {
          n = std::max(n, arena[i].numel());
        }
        bigger.push_back(at::empty({std::max<int64_t>(n, 1)}, inputs[i].options()));
      }
      arena = std::move(bigger);
    }
    std::vector<at::Tensor> views;
    for (size_t i = 0; i < inputs.size(); ++i) {
      views.push_back(arena[i].narrow(0, 0, inputs[i].numel()).view(inputs[i].sizes()));
    }
    return views;
  }

  void capture_into(Entry& e, const std::vector<at::Tensor>& static_inputs, const LossFn& fn,
                    double divisor) {
    const c10::DeviceIndex device = static_inputs.front().device().index();
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device);
    // The current stream when it is not the default one (runtime/compute_stream.h: op-by-op
    // steps and captures then share cuBLAS's workspaces), else one of the pool.
    if (!stream) {
      stream = current != c10::cuda::getDefaultCUDAStream(device)
                   ? current
                   : c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
    }
    // A pool lives while a graph holds it: with none held (the first capture, or all
    // dropped), a new one.
    if (stats.graphs == 0) pool = at::cuda::graph_pool_handle();
    if (!loss_out.defined()) {
      loss_out = at::zeros({}, static_inputs.front().options().dtype(at::kFloat));
    }
    // Casts cached by autocast hold the autograd nodes of the weights, made on another stream:
    // the capture must make its own (a node of another stream makes autograd synchronize with
    // that stream, which a capture refuses).
    at::autocast::clear_cache();
    at::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(*stream);
    {
      const c10::cuda::CUDAStreamGuard on_stream(*stream);
      if (!warmed) {
        // cuBLAS and cuDNN set up their handles and workspaces per stream on first use, which a
        // capture must not be the first to do.
        runtime::memory_point(device, "before the warm-up");
        (void)run(static_inputs, fn, divisor, /*add=*/false);
        warmed = true;
        runtime::memory_point(device, "after the warm-up");
      }
      const AutocastCacheOff no_cache;
      const runtime::HostUploadGuard no_uploads;
      const SuspendedProfile no_phases;  // a phase boundary would become a node of the graph
      e.graph = std::make_unique<at::cuda::CUDAGraph>();
      // Thread-local: the capture forbids unsafe CUDA calls on this thread only; the loader's
      // threads go on, and autograd's device thread queues its kernels onto this stream.
      e.graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
      try {
        loss_out.copy_(run(static_inputs, fn, divisor, /*add=*/true));
      } catch (...) {
        try {
          e.graph->capture_end();
        } catch (...) {
        }
        e.graph.reset();
        (void)cudaGetLastError();  // the failed capture's error is not the next kernel's
        throw;
      }
      e.graph->capture_end();
      runtime::memory_point(device, "after the capture");
    }
    at::cuda::CUDAEvent done;
    done.record(*stream);
    done.block(current);
  }

  // The entry of a shape key, made (with the shapes it stands for) the first time.
  Entry& entry(const std::string& key) {
    auto [it, made] = entries.try_emplace(key);
    if (made) {
      if (!parse_key(key, &it->second.divisor, &it->second.specs)) {
        entries.erase(it);
        throw Error(ErrorKind::kInternal, "GraphedSteps: not a shape key: '" + key + "'");
      }
      stats.shapes = static_cast<int64_t>(entries.size());
    }
    return it->second;
  }

  // Captures a graph for every shape seen so far that has none (the most often seen first, up
  // to the graph limit), before the batch at hand: on every rank at the same step, rather than
  // each rank's captures, spread over an epoch, stalling the others at their all-reduces.
  void capture_seen_shapes(const LossFn& fn) {
    if (!inputs_like) return;
    std::vector<Entry*> todo;
    for (auto& [key, e] : entries) {
      if (!e.graph && wanted(e)) todo.push_back(&e);
    }
    std::stable_sort(todo.begin(), todo.end(), [](const Entry* a, const Entry* b) {
      return a->seen != b->seen ? a->seen > b->seen : a->last_use > b->last_use;
    });
    const size_t room = max_graphs > static_cast<size_t>(stats.graphs)
                            ? max_graphs - static_cast<size_t>(stats.graphs)
                            : 0;
    if (todo.size() > room) todo.resize(room);
    if (todo.empty()) return;
    // The shared input buffers at once as large as the largest of these shapes needs: growing
    // them later would drop the graphs captured before.
    const at::Device device = params.front().device();
    std::vector<at::Tensor> largest;
    for (size_t i = 0; i < todo.front()->specs.size(); ++i) {
      int64_t n = 0;
      for (const Entry* e : todo) {
        if (i < e->specs.size()) n = std::max(n, c10::multiply_integers(e->specs[i].sizes));
      }
      largest.push_back(
          at::empty({n}, at::TensorOptions(device).dtype(todo.front()->specs[i].dtype)));
    }
    (void)views_for(largest);
    MASR_LOG_INFO(
        "train: capturing %zu CUDA graphs, one per batch shape seen so far (about 0.1-0.2 s "
        "each)...",
        todo.size());
    profile_phase("capture");
    const auto start = std::chrono::steady_clock::now();
    int64_t done = 0;
    for (Entry* e : todo) {
      const std::vector<at::Tensor> like = inputs_like(e->specs, device);
      const std::vector<at::Tensor> static_inputs = views_for(like);
      for (size_t i = 0; i < like.size(); ++i) static_inputs[i].copy_(like[i]);
      try {
        capture_into(*e, static_inputs, fn, e->divisor);
      } catch (const std::exception& error) {
        give_up(error);
        return;
      }
      ++stats.captured;
      ++stats.graphs;
      ++done;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MASR_LOG_INFO("train: captured %lld CUDA graphs for the batch shapes seen so far in %.1f s",
                  static_cast<long long>(done), seconds);
  }

  void give_up(const std::exception& error) {
    broken = true;
    entries.clear();
    stats.graphs = 0;
    MASR_LOG_WARN(
        "train: CUDA graphs off for the rest of the run (MASR_CUDA_GRAPHS=0 skips them): "
        "a capture failed: %s",
        error.what());
  }

  // `inputs` by value: once copied into the shared buffers they are dropped, so that the capture
  // or replay does not hold them too.
  at::Tensor graphed(std::vector<at::Tensor> inputs, const LossFn& fn, double divisor) {
    if (capture_seen && capturing) {
      capture_seen = false;
      capture_seen_shapes(fn);
      if (broken) {
        ++stats.eager;
        return run(inputs, fn, divisor, /*add=*/true);
      }
    }
    last_divisor = divisor;
    Entry& e = entry(key_of(specs_of(inputs), divisor));
    e.last_use = ++clock;
    ++e.seen;
    // Capturing off (a run's first epoch): op by op. On, a shape without a graph is captured
    // at once, even the first time it comes: a capture costs no more than a step op by op of
    // a new shape (cuBLAS and cuDNN choose their kernels for it either way; 142 against 164 ms
    // on one H200, 195 against 195 ms on four, bench/results/2026-11-28-h200-x4-graph-epochs.md),
    // and a later batch of it then replays.
    if (!e.graph && !capturing) {
      ++stats.eager;
      return run(inputs, fn, divisor, /*add=*/true);
    }
    // The inputs into the shared buffers (which may drop every graph, e's included).
    const std::vector<at::Tensor> static_inputs = views_for(inputs);
    for (size_t i = 0; i < inputs.size(); ++i) static_inputs[i].copy_(inputs[i]);
    inputs.clear();
    if (!e.graph) {
      profile_phase(
          "capture");  // the step profile tells capturing, replaying and eager steps apart
      make_room();
      try {
        capture_into(e, static_inputs, fn, divisor);
      } catch (const std::exception& error) {
        give_up(error);
        ++stats.eager;
        return run(static_inputs, fn, divisor, /*add=*/true);  // the batch's values, copied
      }
      ++stats.captured;
      ++stats.graphs;
    } else {
      profile_phase("replay");
      ++stats.replayed;
    }
    e.graph->replay();
    return loss_out.clone();
  }
#endif
};

bool GraphedSteps::supported(const at::Device& device) {
#ifdef MASR_GRAPH_CAPTURE
  return device.is_cuda() && graphs_setting() != "0";
#else
  (void)device;
  return false;
#endif
}

bool GraphedSteps::capture_from_start() { return graphs_setting() == "1"; }

bool GraphedSteps::captures_seen_shapes() { return precapture_from_env(); }

void GraphedSteps::set_capturing(bool on) {
  Impl& m = *impl_;
#ifdef MASR_GRAPH_CAPTURE
  if (on && !m.capturing && m.capture && precapture_from_env()) m.capture_seen = true;
#endif
  m.capturing = on;
}

void GraphedSteps::set_inputs_like(InputsLike like) {
#ifdef MASR_GRAPH_CAPTURE
  impl_->inputs_like = std::move(like);
#else
  (void)like;
#endif
}

std::vector<std::string> GraphedSteps::shape_keys() const {
  std::vector<std::string> keys;
#ifdef MASR_GRAPH_CAPTURE
  for (const auto& [key, e] : impl_->entries) keys.push_back(key);
#endif
  return keys;
}

void GraphedSteps::add_shape_keys(const std::vector<std::string>& keys) {
#ifdef MASR_GRAPH_CAPTURE
  if (impl_->broken) return;
  for (const std::string& key : keys) (void)impl_->entry(key);
#else
  (void)keys;
#endif
}

bool GraphedSteps::split_requested() { return graphs_setting() == "split"; }

bool GraphedSteps::pads_new_shapes() { return !env_is("MASR_GRAPH_PAD", "0"); }

bool GraphedSteps::captures_ahead() { return !env_is("MASR_GRAPH_AHEAD", "0"); }

void GraphedSteps::capture_ahead(const std::vector<std::vector<InputSpec>>& shapes) {
#ifdef MASR_GRAPH_CAPTURE
  Impl& m = *impl_;
  if (!m.capture || m.broken || !m.capturing || !m.inputs_like || !m.last_divisor) return;
  for (const std::vector<InputSpec>& specs : shapes) {
    Impl::Entry& e = m.entry(key_of(specs, *m.last_divisor));
    if (e.graph) continue;
    e.ahead = true;
    m.capture_seen = true;
  }
#else
  (void)shapes;
#endif
}

std::vector<std::vector<InputSpec>> GraphedSteps::replayable_shapes() const {
  std::vector<std::vector<InputSpec>> out;
#ifdef MASR_GRAPH_CAPTURE
  const Impl& m = *impl_;
  if (!m.last_divisor) return out;
  for (const auto& [key, e] : m.entries) {
    if (e.divisor == *m.last_divisor && m.will_replay(e)) out.push_back(e.specs);
  }
#endif
  return out;
}

bool GraphedSteps::replays(const std::vector<InputSpec>& specs) const {
#ifdef MASR_GRAPH_CAPTURE
  const Impl& m = *impl_;
  if (!m.last_divisor) return false;
  const auto it = m.entries.find(key_of(specs, *m.last_divisor));
  return it != m.entries.end() && m.will_replay(it->second);
#else
  (void)specs;
  return false;
#endif
}

int64_t GraphedSteps::times_seen(const std::vector<InputSpec>& specs) const {
#ifdef MASR_GRAPH_CAPTURE
  const Impl& m = *impl_;
  if (!m.last_divisor) return 0;
  const auto it = m.entries.find(key_of(specs, *m.last_divisor));
  return it != m.entries.end() ? it->second.seen + it->second.padded : 0;
#else
  (void)specs;
  return 0;
#endif
}

void GraphedSteps::note_padded(const std::vector<InputSpec>& specs) {
  Impl& m = *impl_;
  ++m.stats.padded;
#ifdef MASR_GRAPH_CAPTURE
  if (!m.last_divisor) return;
  ++m.entry(key_of(specs, *m.last_divisor)).padded;
#else
  (void)specs;
#endif
}

bool GraphedSteps::parse_shape_key(const std::string& key, double* divisor,
                                   std::vector<InputSpec>* specs) {
  return parse_key(key, divisor, specs);
}

std::vector<std::pair<std::string, int64_t>> GraphedSteps::shape_counts() const {
  std::vector<std::pair<std::string, int64_t>> counts;
#ifdef MASR_GRAPH_CAPTURE
  for (const auto& [key, e] : impl_->entries) counts.emplace_back(key, e.seen);
#endif
  return counts;
}

GraphedSteps::GraphedSteps(std::vector<at::Tensor> parameters, bool capture, Update update)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (at::Tensor& p : parameters) {
    if (p.requires_grad()) m.params.push_back(p);
  }
  if (m.params.empty()) throw Error(ErrorKind::kInternal, "GraphedSteps: no trainable parameter");
  m.capture = capture;
  if (capture) m.max_graphs = max_graphs_from_env();
  m.update = std::move(update);
  if (m.update) return;  // gradients only inside the step: no flat buffers
  // One flat buffer per dtype and device, in parameter order.
  std::map<std::pair<int, std::string>, int64_t> sizes;
  std::vector<std::pair<int, std::string>> group_of;
  for (const at::Tensor& p : m.params) {
    group_of.emplace_back(static_cast<int>(p.scalar_type()), p.device().str());
    sizes[group_of.back()] += p.numel();
  }
  std::map<std::pair<int, std::string>, size_t> flat_of;
  std::map<std::pair<int, std::string>, int64_t> offset;
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& g = group_of[i];
    if (!flat_of.count(g)) {
      flat_of[g] = m.flats.size();
      m.flats.push_back(at::zeros({sizes[g]}, m.params[i].options().requires_grad(false)));
    }
    // A tensor over the flat buffer's storage rather than a view of it: LibTorch 1.13's
    // zero_grad detaches gradients in place, which views refuse.
    const at::Tensor& flat = m.flats[flat_of[g]];
    m.views.push_back(
        at::empty({0}, flat.options()).set_(flat.storage(), offset[g], m.params[i].sizes()));
    offset[g] += m.params[i].numel();
  }
  m.used.assign(m.params.size(), false);
}

GraphedSteps::~GraphedSteps() = default;

at::Tensor GraphedSteps::forward_backward(std::vector<at::Tensor> inputs, const LossFn& loss_fn,
                                          double divisor, bool first) {
  Impl& m = *impl_;
  if (inputs.empty()) throw Error(ErrorKind::kInternal, "GraphedSteps: no inputs");
  if (m.update && (!first || divisor != 1.0)) {
    throw Error(ErrorKind::kInternal,
                "GraphedSteps: a step with the optimizer's update accumulates no gradients");
  }
  if (first && !m.update) {
    for (at::Tensor& f : m.flats) f.zero_();
    for (size_t i = 0; i < m.params.size(); ++i) {
      if (m.used[i]) m.attach(i);
    }
  }
#ifdef MASR_GRAPH_CAPTURE
  if (m.capture && !m.broken) return m.graphed(std::move(inputs), loss_fn, divisor);
#endif
  ++m.stats.eager;
  return m.run(inputs, loss_fn, divisor, /*add=*/true);
}

const std::vector<at::Tensor>& GraphedSteps::flats() const { return impl_->flats; }

bool GraphedSteps::steps_optimizer() const { return static_cast<bool>(impl_->update); }

GraphStats GraphedSteps::stats() const { return impl_->stats; }

}  // namespace masr::train

// lib/train/gradient_buckets.cpp
// Bucket layout, the per-parameter hooks and the end-of-step averaging (see the header's design).
#include "train/gradient_buckets.h"

#include <algorithm>
#include <mutex>

#include <ATen/ATen.h>

#include "core/env.h"
#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::train {
namespace {

// MASR_GRAD_SLICES=0: p.grad gets a copy of the averages, as before gradient slices (for A/B
// timings).
const bool kGradientSlices = !env_is("MASR_GRAD_SLICES", "0");

}  // namespace

struct GradientBuckets::State {
  struct Slot {
    at::Tensor param;
    size_t bucket = 0;
    int64_t offset = 0;
    bool filled = false;  // this step's gradient is in the bucket
    unsigned hook = 0;
    // The parameter's slice of its bucket as a tensor of its own rather than an autograd view
    // (optimizers that zero gradients in place call detach_() on them first, which views
    // refuse); made once, handed to p.grad by finish().
    at::Tensor slice;
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<size_t> slots;
    size_t pending = 0;  // slots not filled yet
    std::function<void()> wait;
  };

  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  int world_size = 1;
  LaunchSum launch;
  std::mutex mutex;  // hooks may run on autograd's device threads
  bool armed = false;
  size_t next = 0;  // the next bucket to launch

  at::Tensor view(const Slot& s) const {
    return buckets[s.bucket].flat.narrow(0, s.offset, s.param.numel()).view(s.param.sizes());
  }
  // Whether p.grad is still the slice finish() gave it (pointer arithmetic only: this runs for
  // every parameter before every backward).
  bool grad_is_slice(const Slot& s) const {
    const at::Tensor& grad = s.param.grad();
    if (!grad.defined()) return false;
    const at::Tensor& flat = buckets[s.bucket].flat;
    return grad.data_ptr() ==
           static_cast<const char*>(flat.data_ptr()) + s.offset * flat.element_size();
  }
  void fill(Slot& s, const at::Tensor& incoming) {
    at::Tensor v = view(s);
    const at::Tensor& grad = s.param.grad();
    if (incoming.defined()) {
      v.copy_(incoming);
      if (grad.defined()) v.add_(grad);
    } else if (grad.defined()) {
      v.copy_(grad);
    } else {
      v.zero_();
    }
    s.filled = true;
    --buckets[s.bucket].pending;
  }
  void launch_ready() {
    while (next < buckets.size() && buckets[next].pending == 0) {
      buckets[next].wait = launch(buckets[next].flat);
      ++next;
    }
  }
  // A fresh step: no slot filled, no bucket launched, not armed.
  void reset_step() {
    for (auto& slot : slots) slot.filled = false;
    for (auto& bucket : buckets) {
      bucket.pending = bucket.slots.size();
      bucket.wait = nullptr;
    }
    next = 0;
    armed = false;
  }
  void on_gradient(size_t index, const at::Tensor& incoming) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!armed || slots[index].filled) return;
    fill(slots[index], incoming);
    launch_ready();
  }
};

GradientBuckets::GradientBuckets(std::vector<at::Tensor> parameters, int64_t bucket_bytes,
                                 int world_size, LaunchSum launch)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.world_size = world_size;
  st.launch = std::move(launch);
  std::vector<std::vector<size_t>> groups;
  int64_t group_bytes = 0;
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
    if (!it->requires_grad()) continue;
    const size_t index = st.slots.size();
    const bool same_kind =
        !groups.empty() &&
        st.slots[groups.back().front()].param.options().type_equal(it->options());
    if (groups.empty() || !same_kind || group_bytes >= bucket_bytes) {
      groups.emplace_back();
      group_bytes = 0;
    }
    st.slots.push_back({*it, groups.size() - 1, 0, false, 0});
    groups.back().push_back(index);
    group_bytes += it->numel() * static_cast<int64_t>(it->element_size());
  }
  for (const auto& group : groups) {
    State::Bucket bucket;
    int64_t numel = 0;
    for (size_t i : group) {
      st.slots[i].offset = numel;
      numel += st.slots[i].param.numel();
    }
    bucket.flat = at::zeros({numel}, st.slots[group.front()].param.options());
    for (size_t i : group) {
      st.slots[i].slice =
          at::empty({0}, bucket.flat.options())
              .set_(bucket.flat.storage(), st.slots[i].offset, st.slots[i].param.sizes());
    }
    bucket.slots = group;
    bucket.pending = group.size();
    st.buckets.push_back(std::move(bucket));
  }
  State* raw = state_.get();
  for (size_t i = 0; i < st.slots.size(); ++i) {
    // The hook sees the gradient before autograd accumulates it into p.grad; it returns nothing,
    // so autograd goes on as usual (finish() overwrites p.grad with the average).
    st.slots[i].hook = st.slots[i].param.register_hook(
        [raw, i](const at::Tensor& grad) { raw->on_gradient(i, grad); });
  }
}

GradientBuckets::~GradientBuckets() {
  for (auto& slot : state_->slots) slot.param.remove_hook(slot.hook);
}

void GradientBuckets::release() {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  for (auto& slot : st.slots) {
    // Autograd accumulates into a defined p.grad in place, and would write into a bucket whose
    // all-reduce may be under way. Optimizers that set gradients to none (LibTorch 2) leave
    // nothing to do here; one that zeroes them in place (1.13) gets its own zeroed tensor back.
    if (st.grad_is_slice(slot)) slot.param.mutable_grad() = slot.param.grad().clone();
  }
}

void GradientBuckets::arm() {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  // finish() leaves a fresh step behind; a CUDA graph capture that failed half-way may not
  // have (its hooks filled slots and captured all-reduces that never ran, and the step is then
  // run op by op).
  st.reset_step();
  st.armed = true;
}

void GradientBuckets::finish() {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.slots.empty()) return;
  // Which parameters have a gradient anywhere: reduced after the buckets, in the same order on
  // every rank.
  std::vector<float> local_used(st.slots.size(), 0.0f);
  for (size_t i = 0; i < st.slots.size(); ++i) {
    State::Slot& s = st.slots[i];
    // A filled slot had a hook call, hence a gradient; otherwise p.grad tells.
    local_used[i] = (s.filled || s.param.grad().defined()) ? 1.0f : 0.0f;
    if (!s.filled) st.fill(s, at::Tensor());
  }
  const bool all_used_here =
      std::all_of(local_used.begin(), local_used.end(), [](float u) { return u > 0.0f; });
  const at::TensorOptions flags = st.slots.front().param.options().dtype(at::kFloat);
  // All used (every step of the usual models): ones made on the device, which a CUDA graph
  // capture can hold. Otherwise through pinned memory (a plain host-to-device copy would stop
  // the host until the backward has finished on the GPU); a capture refuses that upload and the
  // read back below, and the step runs op by op.
  const at::Tensor used = all_used_here
                              ? at::ones({static_cast<int64_t>(st.slots.size())}, flags)
                              : runtime::to_device_async(at::tensor(local_used), flags.device());
  st.launch_ready();
  if (st.next != st.buckets.size()) {
    throw Error(ErrorKind::kInternal, "data parallel: a gradient bucket was left unlaunched");
  }
  const auto wait_used = st.launch(used);
  for (auto& bucket : st.buckets) {
    bucket.wait();
    bucket.flat.div_(static_cast<double>(st.world_size));
  }
  wait_used();
  // The reduced flags matter only for parameters this rank did not use (used by another rank or
  // by none); when it used every one, as in every step of the usual models, they are not read
  // back (the read would stop the host until the all-reduces are done). The collective itself
  // runs on every rank either way, so the ranks' collectives stay matched.
  at::Tensor used_cpu;
  if (!all_used_here) used_cpu = used.cpu();
  const float* used_any = all_used_here ? local_used.data() : used_cpu.data_ptr<float>();
  for (size_t i = 0; i < st.slots.size(); ++i) {
    State::Slot& s = st.slots[i];
    // p.grad becomes the parameter's slice of its bucket: no copy and no allocation per
    // parameter (a kernel launch each, several hundred per step, in steps whose pace is the
    // host's), and the averages are not held twice (PyTorch DDP's gradient_as_bucket_view).
    if (used_any[i] > 0.0f) {
      if (kGradientSlices) {
        s.param.mutable_grad() = s.slice;
      } else if (s.param.grad().defined() && !st.grad_is_slice(s)) {
        s.param.mutable_grad().copy_(st.view(s));
      } else {
        s.param.mutable_grad() = st.view(s).clone();
      }
    }
  }
  st.reset_step();
}

size_t GradientBuckets::bucket_count() const { return state_->buckets.size(); }

size_t GradientBuckets::launched() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->next;
}

bool same_parameters(const std::vector<at::Tensor>& parameters,
                     const std::vector<at::Tensor>& other) {
  if (parameters.size() != other.size()) return false;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].is_same(other[i])) return false;
  }
  return true;
}

}  // namespace masr::train

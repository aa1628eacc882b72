// lib/hparams/builder.cpp
#include "hparams/builder.h"

#include <map>
#include <utility>

#include "core/error.h"

namespace masr::hparams {
namespace {

constexpr const char* kSupportedFamilies =
    "The supported SpeechBrain recipe families are the LibriSpeech Conformer, Transformer and "
    "Branchformer encoder-decoders (ASR/transformer), the CTC Conformer and Branchformer "
    "(ASR/CTC), the Transformer LM, and Mamba-ASR's ConMamba recipes (docs/hparams.md lists the "
    "files tested).";

// SpeechBrain classes of recipe families that stay outside mamba-asr: pretrained hub encoders,
// RNN sequence-to-sequence models, LLM recipes, k2 training.
const char* out_of_scope_family(const std::string& name) {
  static const std::pair<const char*, const char*> kFamilies[] = {
      {"speechbrain.lobes.models.huggingface_transformers.",
       "the pretrained hub models (wav2vec2, WavLM, Whisper, ...)"},
      {"speechbrain.integrations.huggingface.",
       "the pretrained hub models (wav2vec2, WavLM, Whisper, LLMs)"},
      {"speechbrain.lobes.models.fairseq_wav2vec.", "the pretrained hub models (fairseq wav2vec2)"},
      {"speechbrain.lobes.models.wav2vec.", "the self-supervised wav2vec2 / BEST-RQ recipes"},
      {"speechbrain.lobes.models.CRDNN.", "the RNN sequence-to-sequence recipes (CRDNN)"},
      {"speechbrain.lobes.models.RNNLM.", "the RNN language models"},
      {"speechbrain.nnet.RNN.", "the RNN sequence-to-sequence recipes"},
      {"speechbrain.decoders.S2SRNNBeamSearcher", "the RNN sequence-to-sequence recipes"},
      {"speechbrain.decoders.seq2seq.S2SWhisper", "the Whisper recipes"},
      {"speechbrain.decoders.seq2seq.S2SHuggingFaceLLM", "the LLM recipes"},
      {"speechbrain.k2_integration.", "the k2 recipes"},
      {"speechbrain.integrations.k2_fsa.", "the k2 recipes"},
      {"speechbrain.nnet.adapters.", "the adapter (LoRA) fine-tuning recipes"},
      {"speechbrain.lobes.downsampling.", "the downsampled SSL recipes"},
      // Classes those recipes use before their first hub or RNN model is built:
      {"speechbrain.dataio.encoder.CTCTextEncoder", "the pretrained-encoder CTC recipes"},
      {"speechbrain.lobes.models.VanillaNN.", "the pretrained-encoder recipes"},
      {"torch.optim.Adadelta", "the RNN and pretrained-encoder recipes (Adadelta)"},
  };
  for (const auto& [prefix, family] : kFamilies) {
    if (name.rfind(prefix, 0) == 0) return family;
  }
  return nullptr;
}

const char* kNewTag = "!new:";
const char* kNameTag = "!name:";
const char* kApplyTag = "!apply:";

// Building recurses through nested values; bounding the depth keeps hostile files from
// overflowing the stack.
constexpr size_t kMaxDepth = 1000;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class Builder {
 public:
  Builder(const Registry& registry, std::vector<BuiltObject>& objects)
      : registry_(registry), objects_(objects) {}

  // An object that is a top-level value is named by its top-level key, even when a reference to
  // it is met first (`model: [!ref <CNN>]` before `CNN:`).
  void name_top_level(const Node* node, const std::string& key) { top_level_.emplace(node, key); }

  Value build(const NodePtr& in, const std::string& key) {
    const NodePtr node = in->resolved_to ? in->resolved_to : in;
    auto memo = memo_.find(node.get());
    if (memo != memo_.end()) return memo->second;
    for (const Node* open : stack_) {
      if (open == node.get()) {
        throw_config_error("hparams: " + node->where.str() + ": '" + key +
                           "' contains a reference to itself (a reference cycle)");
      }
    }
    stack_.push_back(node.get());
    if (stack_.size() > kMaxDepth) {
      throw_config_error("hparams: " + node->where.str() + ": '" + key + "' is nested more than " +
                         std::to_string(kMaxDepth) + " levels deep");
    }
    Value value = build_node(*node, key);
    stack_.pop_back();
    if (value.where().file.empty()) value.set_origin(node->where, key);
    memo_[node.get()] = value;
    return value;
  }

 private:
  Value build_node(const Node& node, const std::string& key) {
    const std::string& tag = node.tag;
    if (tag.empty()) return build_plain(node, key);
    if (starts_with(tag, kNewTag)) return build_new(node, key, tag.substr(5));
    if (starts_with(tag, kNameTag)) return build_name(node, key, tag.substr(6));
    if (starts_with(tag, kApplyTag)) return build_apply(node, key, tag.substr(7));
    if (tag == "!tuple") return build_tuple(node, key);
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      return build_standard(node, key);
    }
    if (starts_with(tag, "!module:")) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key +
                         "': !module: (a Python module) has no meaning in mamba-asr");
    }
    throw_config_error("hparams: " + node.where.str() + ": '" + key + "' has the unknown tag '" +
                       tag +
                       "'. Supported: !ref, !copy, !new:, !name:, !apply:, !include:, "
                       "!PLACEHOLDER, !tuple");
  }

  Value build_plain(const Node& node, const std::string& key) {
    if (node.is_scalar()) {
      Value v = node.value;
      return v.set_origin(node.where, key);
    }
    if (node.is_sequence()) {
      Value::List items;
      for (size_t i = 0; i < node.items.size(); ++i) {
        items.push_back(build(node.items[i], key + "[" + std::to_string(i) + "]"));
      }
      return Value::list(std::move(items)).set_origin(node.where, key);
    }
    Value::Map entries;
    for (const auto& [k, child] : node.entries) {
      entries.emplace_back(k, build(child, key.empty() ? k : key + "[" + k + "]"));
    }
    return Value::map(std::move(entries)).set_origin(node.where, key);
  }

  Value build_tuple(const Node& node, const std::string& key) {
    if (node.is_sequence()) {
      Value list = build_plain(node, key);
      return Value::tuple(list.items()).set_origin(node.where, key);
    }
    if (node.is_scalar()) {
      std::string text = node.text;
      if (text.empty() || text.front() != '(') text = "(" + text + ")";
      return parse_plain_scalar(text, node.where).set_origin(node.where, key);
    }
    throw_config_error("hparams: " + node.where.str() + ": '" + key +
                       "': !tuple takes a list or a scalar such as (1, 2)");
  }

  Value build_standard(const Node& node, const std::string& key) {
    Value v = parse_plain_scalar(node.text, node.where);
    const std::string& tag = node.tag;
    const bool ok = (tag.find(":int") != std::string::npos && v.type() == Value::Type::kInt) ||
                    (tag.find(":float") != std::string::npos && v.is_number()) ||
                    (tag.find(":bool") != std::string::npos && v.type() == Value::Type::kBool) ||
                    (tag.find(":null") != std::string::npos && v.is_null());
    if (!ok) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key + "': '" + node.text +
                         "' is not a valid " + tag.substr(tag.rfind(':') + 1));
    }
    if (tag.find(":float") != std::string::npos) v = Value::real(v.as_double());
    return v.set_origin(node.where, key);
  }

  const ClassInfo& find_class(const Node& node, const std::string& key, const std::string& name) {
    const ClassInfo* info = registry_.find(name);
    if (info != nullptr) return *info;
    if (const char* family = out_of_scope_family(name)) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key + "': '" + name +
                         "' belongs to " + family + ", which mamba-asr does not train. " +
                         kSupportedFamilies);
    }
    std::string suggestions;
    for (const auto& close : registry_.closest(name)) {
      suggestions += (suggestions.empty() ? "" : ", ") + close;
    }
    // A SpeechBrain class outside every supported family: say which families load.
    const std::string families =
        starts_with(name, "speechbrain.") ? std::string(" ") + kSupportedFamilies : "";
    throw_config_error("hparams: " + node.where.str() + ": '" + key + "': unknown class '" + name +
                       "'. Closest registered names: " + suggestions +
                       ". (`mamba-asr train --list-classes` lists all.)" + families);
  }

  Args collect_args(const Node& node, const std::string& key, const std::string& callee) {
    Args args;
    args.callee = callee;
    args.where = node.where;
    args.key = key;
    auto add_keywords = [&](const Node& mapping, const std::string& at) {
      for (const auto& [k, child] : mapping.entries) {
        args.keywords.emplace_back(k, build(child, at + "[" + k + "]"));
      }
    };
    auto add_positional = [&](const Node& sequence, const std::string& at) {
      for (size_t i = 0; i < sequence.items.size(); ++i) {
        args.positional.push_back(build(sequence.items[i], at + "[" + std::to_string(i) + "]"));
      }
    };
    if (node.is_mapping()) {
      const NodePtr* a = const_cast<Node&>(node).find("_args");
      const NodePtr* kw = const_cast<Node&>(node).find("_kwargs");
      if (a != nullptr && kw != nullptr && node.entries.size() == 2) {
        const Node& positional = *((*a)->resolved_to ? (*a)->resolved_to : *a);
        const Node& keywords = *((*kw)->resolved_to ? (*kw)->resolved_to : *kw);
        if (!positional.is_sequence() || !keywords.is_mapping()) {
          throw_config_error("hparams: " + node.where.str() + ": '" + key +
                             "': _args must be a list and _kwargs a mapping");
        }
        add_positional(positional, key + "[_args]");
        add_keywords(keywords, key + "[_kwargs]");
      } else {
        add_keywords(node, key);
      }
    } else if (node.is_sequence()) {
      add_positional(node, key);
    } else if (!node.text.empty()) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key + "': the arguments of " +
                         callee + " must be a mapping (keywords) or a list (positional), not '" +
                         node.text + "'");
    }
    return args;
  }

  Value build_new(const Node& node, const std::string& key, const std::string& name) {
    const ClassInfo& info = find_class(node, key, name);
    if (info.kind != CallableKind::kClass) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key + "': " + name +
                         " is a function, not a class: use !name: to bind it or !apply: to call "
                         "it");
    }
    auto instance = std::make_shared<Instance>();
    auto top = top_level_.find(&node);
    instance->key = top != top_level_.end() ? top->second : key;
    instance->info = &info;
    instance->args = collect_args(node, key, name);
    bind_arguments(info, instance->args, /*binding=*/false);
    if (info.build) instance->object = info.build(instance->args);
    objects_.push_back(BuiltObject{instance->key, instance});
    return Value::object(instance).set_origin(node.where, key);
  }

  Value build_name(const Node& node, const std::string& key, const std::string& name) {
    const ClassInfo& info = find_class(node, key, name);
    auto partial = std::make_shared<Partial>();
    partial->info = &info;
    partial->bound = collect_args(node, key, name);
    bind_arguments(info, partial->bound, /*binding=*/true);
    return Value::factory(partial).set_origin(node.where, key);
  }

  Value build_apply(const Node& node, const std::string& key, const std::string& name) {
    const ClassInfo& info = find_class(node, key, name);
    if (!info.apply) {
      throw_config_error("hparams: " + node.where.str() + ": '" + key + "': " + name +
                         " cannot be called with !apply: at load time (supported: "
                         "torch.manual_seed)");
    }
    Args args = collect_args(node, key, name);
    bind_arguments(info, args, /*binding=*/false);
    return info.apply(args).set_origin(node.where, key);
  }

  const Registry& registry_;
  std::vector<BuiltObject>& objects_;
  std::map<const Node*, Value> memo_;
  std::map<const Node*, std::string> top_level_;
  std::vector<const Node*> stack_;
};

}  // namespace

Value build_values(const NodePtr& root, const Registry& registry,
                   std::vector<BuiltObject>& objects) {
  if (!root->is_mapping()) {
    throw_config_error("hparams: " + root->where.str() +
                       ": an hparams file must be a mapping of keys to values");
  }
  Builder builder(registry, objects);
  for (const auto& [key, child] : root->entries) {
    if (key.rfind("__", 0) != 0)
      builder.name_top_level((child->resolved_to ? child->resolved_to : child).get(), key);
  }
  Value::Map entries;
  for (const auto& [key, child] : root->entries) {
    Value value = builder.build(child, key);  // `__` keys are built (e.g. !apply: seeds) ...
    if (key.rfind("__", 0) != 0) entries.emplace_back(key, std::move(value));  // ... then dropped
  }
  return Value::map(std::move(entries)).set_origin(root->where, "");
}

}  // namespace masr::hparams

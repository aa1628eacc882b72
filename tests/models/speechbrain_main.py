# tests/models/speechbrain_main.py
# Imports SpeechBrain's current code (its `speechbrain/` folder on PYTHONPATH) under Debian's
# /usr/bin/python3 (PyTorch 1.13): the few APIs that SpeechBrain now calls and that PyTorch 1.13
# lacks get stand-ins with the same arithmetic, and third-party modules it imports at top level
# for unrelated features (scipy, sentencepiece, ...) become empty stubs. Used by
# make_speechbrain_fixtures.py and tests/fixtures/speechbrain/make_param_counts.py.
#
#   PYTHONPATH=<dir with speechbrain/>:<dir with hyperpyyaml/ and ruamel/> /usr/bin/python3 ...
import importlib.abc
import importlib.machinery
import math
import re
import sys
import types

import torch

NOTES = []


def note(message):
    NOTES.append(message)
    print("[speechbrain_main] " + message, file=sys.stderr, flush=True)


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention (PyTorch >= 2.0), written out: boolean
    masks are True where attention is allowed; a float mask is added to the scores."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        n, s = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(n, s, dtype=torch.bool).triu(1), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = torch.dropout(weights, dropout_p, True)
    return torch.matmul(weights, value)


def _install_compat():
    if not hasattr(torch.optim.lr_scheduler, "LRScheduler"):
        torch.optim.lr_scheduler.LRScheduler = torch.optim.lr_scheduler._LRScheduler
        note("shim: torch.optim.lr_scheduler.LRScheduler -> _LRScheduler (PyTorch 1.13)")
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        torch.nn.functional.scaled_dot_product_attention = _sdpa
        note("shim: F.scaled_dot_product_attention written out (PyTorch 1.13 lacks it)")
    try:
        torch.squeeze(torch.zeros(1, 2, 1), dim=(0, 2))
    except TypeError:
        squeeze = torch.squeeze

        def squeeze_dims(input, dim=None):  # PyTorch >= 2.0 takes a tuple of dims
            if isinstance(dim, (tuple, list)):
                for d in sorted((d % input.dim() for d in dim), reverse=True):
                    input = squeeze(input, d)
                return input
            return squeeze(input) if dim is None else squeeze(input, dim)
        torch.squeeze = squeeze_dims
        note("shim: torch.squeeze(x, dim=tuple) one dim at a time (PyTorch 1.13)")
    try:
        torch.amp.custom_fwd(lambda x: x, device_type="cpu")
    except (AttributeError, TypeError):
        # PyTorch >= 2.4's device-generic decorators; these runs use no autocast, under which
        # they leave the function as it is.
        def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
            return (lambda f: f) if fwd is None else fwd

        def custom_bwd(bwd=None, *, device_type="cuda"):
            return (lambda f: f) if bwd is None else bwd
        torch.amp.custom_fwd, torch.amp.custom_bwd = custom_fwd, custom_bwd
        note("shim: torch.amp.custom_fwd/custom_bwd(device_type=...) as the identity (no autocast)")
    try:
        import packaging.version  # noqa: F401
    except ImportError:
        def parse(text):
            return tuple(int(x) for x in re.findall(r"\d+", str(text).split("+")[0])[:3])
        package, version = types.ModuleType("packaging"), types.ModuleType("packaging.version")
        version.parse = version.Version = parse
        package.version = version
        sys.modules["packaging"], sys.modules["packaging.version"] = package, version
        note("stub: packaging.version.parse compares version numbers as int tuples")
    try:
        import torchaudio
        if not hasattr(torchaudio, "list_audio_backends"):
            torchaudio.list_audio_backends = lambda: ["soundfile"]
    except ImportError:
        pass


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        cls = type(name, (Exception,), {})
        setattr(self, name, cls)
        return cls


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self.roots = set()

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def import_speechbrain():
    """Imports speechbrain, stubbing each missing third-party top-level import."""
    _install_compat()
    finder = _StubFinder()
    sys.meta_path.append(finder)
    for _ in range(20):
        try:
            import speechbrain  # noqa: F401
            return speechbrain
        except ModuleNotFoundError as e:
            root = (e.name or "").split(".")[0]
            if not root or root in finder.roots or root in ("speechbrain", "torch"):
                raise
            finder.roots.add(root)
            note(f"stub: '{root}' is not installed; SpeechBrain imports it at top level")
            for k in [k for k in sys.modules if k == "speechbrain" or k.startswith("speechbrain.")]:
                del sys.modules[k]
    raise RuntimeError("could not import speechbrain")


def load_blocks(path, overrides, drop):
    """The hparams file with its top-level blocks named in `drop` left out (objects that read
    files or the network: tokenizer, pretrainer, searchers), loaded by HyperPyYAML."""
    from hyperpyyaml import load_hyperpyyaml
    blocks, current = [], None
    for line in open(path).read().splitlines(keepends=True):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):", line)
        if m:
            current = [m.group(1), []]
            blocks.append(current)
        if current is None:
            blocks.append(["", [line]])
        else:
            current[1].append(line)
    text = "".join("".join(b[1]) for b in blocks if b[0] not in drop)
    return load_hyperpyyaml(text, overrides=dict(overrides, data_folder="/tmp/unused"))


# Blocks that build objects no forward pass or parameter count needs.
DROP = {"tokenizer", "ctc_scorer", "transformerlm_scorer", "scorer_test_search", "scorer",
        "scorer_valid_search", "valid_search", "test_search", "checkpointer", "epoch_counter",
        "train_logger", "error_rate_computer", "acc_computer", "cer_computer", "wer_computer",
        "pretrainer", "lm_model", "test_searcher", "kenlm_model_path", "test_beam_search"}

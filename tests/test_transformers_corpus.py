"""``irviz lint`` on real library models (issues 12 and 29): the 13 Hugging Face models of
tests/corpus/transformers_models.py in their default configuration, traced with keyword
inputs, plus a user's classifier around BERT.

Every finding is listed below with its verdict, judged by reading the library line:
``pitfall`` (the trace is wrong for other inputs a deployment gives) or ``info`` (true but
harmless: a validation that raises, a value that is the same for every call of this
kind). Since issue 29 the severity comes from execution: an error needs a counterexample
input (the trace and the Python model differ on it), so the pitfalls the generic variant
inputs expose (Swin's padding and windowing at another image size, ViT's dtype cast) are
errors with their counterexample, and everything else is info, which never fails the run.
The findings that were wrong before (a type test read as metadata, a cache's ``update``
read as tensor iteration, arguments the inputs do pass) must not come back, not even with
``--show-unconfirmed``. A finding is matched by model, code, file and the start of its
line's text, so a transformers release that moves lines does not break it.
"""
from __future__ import annotations

import linecache
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from irviz.lint.gate import Gate  # noqa: E402
from irviz.lint.layers.context import LintOptions  # noqa: E402
from irviz.lint.session import LintSession  # noqa: E402
from irviz.workspace import Workspace  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus" / "transformers_models.py"

SDPA, MASKS = "integrations/sdpa_attention.py", "masking_utils.py"
IS_CAUSAL = "is_causal = q_length > 1 and attention_mask is None"
CAUSAL_MASK = "if is_causal and attention_mask is None and q_length > 1"
PAD_MASK = "if (padding_length := kv_length + kv_offset - attention_mask"
CUT_MASK = "if padding_mask is not None and padding_mask.shape[-1] > kv_"
SKIP_MASK = "if (q_length == 1 or kv_length == q_length) and (padding_mas"
CHANNELS = "if num_channels != self.num_channels:"

#: (model, code, file, start of the line) -> verdict; "error": a counterexample proves it
EXPECTED = {
    # the attention's causal flag from the example's query length: with an attention mask
    # or without, every variant (a one-token sequence included) agrees with the model
    **{(m, "IRV101", SDPA, IS_CAUSAL): "info" for m in (
        "bert()", "distilbert()", "gpt2()", "llama()", "t5()", "bart()", "vit()", "swin()",
        "wav2vec2()", "whisper()", "clip()", "Classifier")},
    **{(m, "IRV101", SDPA, CAUSAL_MASK): "info" for m in ("t5()", "whisper()", "clip()")},
    ("llama()", "IRV101", SDPA, "elif q_length == 1 and not is_torchdynamo_compiling():"):
        "info",  # grouped-query packing: the one-token variant agrees
    # padding the mask to the key length: equal lengths without a cache, so harmless here
    **{(m, "IRV101", MASKS, PAD_MASK): "info" for m in (
        "bert()", "distilbert()", "gpt2()", "llama()", "bart()", "Classifier")},
    **{(m, "IRV101", MASKS, CUT_MASK): "info" for m in ("gpt2()", "llama()", "bart()")},
    # the mask dropped because the mask is all ones: these models make it themselves
    **{(m, "IRV101", MASKS, SKIP_MASK): "info" for m in ("t5()", "whisper()", "clip()")},
    ("t5()", "IRV101", "cache_utils.py", "if not self.is_initialized or self.keys.numel() == 0:"):
        "info",  # the cache the model makes for itself is empty at the start of every call
    # input validations that raise: frozen, and harmless
    **{(m, "IRV101", f"models/{m[:-2]}/modeling_{m[:-2]}.py", CHANNELS): "info"
       for m in ("vit()", "resnet()", "convnext()")},
    ("vit()", "IRV101", "models/vit/modeling_vit.py",
     "if height != self.image_size[0] or width != self.image_size["): "info",
    ("clip()", "IRV101", "models/clip/modeling_clip.py",
     "if not interpolate_pos_encoding and (height != self.image_si"): "info",
    ("clip()", "IRV101", "models/clip/modeling_clip.py",
     "if seq_length > max_position_embedding:"): "info",
    ("whisper()", "IRV101", "models/whisper/modeling_whisper.py",
     "if input_features.shape[-1] != expected_seq_length:"): "info",
    # Swin pads and windows by the example's resolution: a 33x33 image goes wrong; one
    # counterexample, one finding (where the runs first part ways), the other four
    # decisions it changed named there (SWIN_RELATED)
    ("swin()", "IRV101", "models/swin/modeling_swin.py", "if width % self.patch_size[1] != 0:"):
        "error",
    # the forward arguments the keyword inputs leave out, one finding per signature; a
    # pitfall where the left-out attention mask is what a padded batch needs
    ("bert()", "IRV122", "models/bert/modeling_bert.py", "token_type_ids: torch.Tensor | None"):
        "info",
    ("distilbert()", "IRV122", "models/distilbert/modeling_distilbert.py",
     "inputs_embeds: torch.Tensor | None"): "info",
    ("gpt2()", "IRV122", "models/gpt2/modeling_gpt2.py", "cache: Cache | None = None,"): "info",
    ("llama()", "IRV122", "models/llama/modeling_llama.py", "position_ids: torch.LongTensor"):
        "info",
    ("bart()", "IRV122", "models/bart/modeling_bart.py", "decoder_input_ids: torch.LongTensor"):
        "info",
    ("vit()", "IRV122", "models/vit/modeling_vit.py", "bool_masked_pos: torch.BoolTensor"): "info",
    ("swin()", "IRV122", "models/swin/modeling_swin.py", "bool_masked_pos: torch.BoolTensor"):
        "info",
    ("resnet()", "IRV122", "models/resnet/modeling_resnet.py", "output_hidden_states: bool"):
        "info",
    ("t5()", "IRV122", "models/t5/modeling_t5.py", "attention_mask: torch.Tensor | None"):
        "info",
    ("wav2vec2()", "IRV122", "models/wav2vec2/modeling_wav2vec2.py",
     "attention_mask: torch.Tensor | None"): "info",
    ("whisper()", "IRV122", "models/whisper/modeling_whisper.py",
     "attention_mask: torch.LongTensor | None"): "info",
    ("clip()", "IRV122", "models/clip/modeling_clip.py", "attention_mask: torch.Tensor | None"):
        "info",
    # ViT casts pixel values to its weights' dtype only when they differ: traced with
    # float32, a float64 image makes the trace raise where the model runs
    ("vit()", "IRV102", "models/vit/modeling_vit.py", "if pixel_values.dtype != expected_dtype:"):
        "error",
}
#: info everywhere, with the reason: a library's device reads (trace on the device you
#: deploy) and a library that does not script (it deploys by tracing)
LIBRARY_INFO = ("IRV121", "IRV301")

#: (model, code, file, start of the line): wrong, never to be reported (even unconfirmed)
NEVER = [
    ("t5()", "IRV102", "models/t5/modeling_t5.py", "if isinstance(cache, EncoderDecoderCache):"),
    ("t5()", "IRV102", "models/t5/modeling_t5.py", "past_seen_tokens = past_seen_tokens.clone() if"),
    ("t5()", "IRV104", "models/t5/modeling_t5.py", "key_states, value_states = curr_cache.update("),
    ("t5()", "IRV101", "models/t5/modeling_t5.py", "if is_cross_attention and cache is not None"),
    ("t5()", "IRV102", "models/t5/modeling_t5.py", "if is_cross_attention and isinstance(cache,"),
    ("whisper()", "IRV102", "models/whisper/modeling_whisper.py",
     "if cache is not None and isinstance(cache, EncoderDecoderCache):"),
    ("whisper()", "IRV101", "models/whisper/modeling_whisper.py",
     "if is_cross_attention and cache and is_updated:"),
    ("whisper()", "IRV104", "models/whisper/modeling_whisper.py",
     "key_states, value_states = cache.update("),
    ("bart()", "IRV102", "models/bart/modeling_bart.py", "if isinstance(cache, EncoderDecoderCache)"),
    ("gpt2()", "IRV102", "models/gpt2/modeling_gpt2.py",
     "if self.config.add_cross_attention and not isinstance(cache,"),
    # the fp32 model never evaluates the data half; `skip_the_layer` is a tensor only in
    # training: the lines ran without a TracerWarning
    ("bart()", "IRV101", "models/bart/modeling_bart.py", "hidden_states.dtype == torch.float16 and"),
    ("wav2vec2()", "IRV101", "models/wav2vec2/modeling_wav2vec2.py",
     "if not skip_the_layer or synced_gpus:"),
    # the body of `if self.training:` never ran in these eval models
    ("whisper()", "IRV101", "models/whisper/modeling_whisper.py",
     "if dropout_probability < self.layerdrop:"),
    ("bart()", "IRV101", "models/bart/modeling_bart.py", "if dropout_probability < self.layerdrop:"),
]


def _key(model: str, d) -> tuple:
    text = linecache.getline(d.path, d.line).strip()
    return model, d.code, d.path.split("site-packages/transformers/")[-1], text


def _matches(key: tuple, pattern: tuple) -> bool:
    return key[:3] == pattern[:3] and key[3].startswith(pattern[3])


@pytest.fixture(scope="module")
def corpus():
    """Every model linted once (default options), in one workspace."""
    workspace = Workspace()
    gate = Gate.from_config()
    session = LintSession(workspace, LintOptions())
    report = session.run([str(CORPUS)], gate)
    targets = workspace.load(str(CORPUS)).targets
    runs = {t.name: session.target(t) for t in targets}
    return workspace, gate, report, targets, runs


@pytest.mark.slow
def test_every_model_traces_with_keyword_inputs(corpus):
    _, _, report, targets, runs = corpus
    assert len(targets) == 14 and report.models == 14 and not report.errors
    for name, run in runs.items():
        assert run.trace is not None, name
        assert run.trace.inputs.kwargs and not run.trace.inputs.args, name


@pytest.mark.slow
def test_the_default_findings_are_exactly_the_judged_ones(corpus):
    _, gate, report, _, runs = corpus
    got = {_key(name, d): d for name, run in runs.items() for d in gate.apply(run.found).kept
           if d.code not in LIBRARY_INFO}
    unexpected = [k for k in got if not any(_matches(k, p) for p in EXPECTED)]
    missing = [p for p in EXPECTED if not any(_matches(k, p) for k in got)]
    assert not unexpected and not missing, (unexpected, missing)
    assert set(EXPECTED.values()) == {"error", "info"}
    for key, d in got.items():
        [verdict] = {v for p, v in EXPECTED.items() if _matches(key, p)}
        if verdict == "error":  # proven by an input, named in the finding
            assert d.severity == "error" and d.evidence.verdict == "counterexample", (key, d)
            assert d.evidence.variant and d.evidence.difference, d.evidence
        else:
            # a library's decision no variant drove is undecided, and info there
            assert d.severity == "info" and d.evidence.verdict in ("held", "undecided"), (
                key, d.evidence)
    [swin] = [d for k, d in got.items() if k[0] == "swin()" and d.severity == "error"]
    related = {line for _path, line, message in swin.related
               if message.endswith("decided differently on the same counterexample")}
    assert len(related) == 4, swin.related
    [cast] = [d for k, d in got.items() if k[1] == "IRV102"]
    assert cast.evidence.variant == "pixel_values float32 -> float64"
    assert "the trace raises" in cast.evidence.difference and "the model runs" in \
        cast.evidence.difference
    library = [d for run in runs.values() for d in gate.apply(run.found).kept
               if d.code in LIBRARY_INFO]
    assert library and all(d.severity == "info" and d.evidence.reason for d in library)
    # a run fails only on the models a counterexample breaks
    proven = {d.target for d in report.diagnostics if d.severity != "info"}
    assert proven == {"vit()", "swin()"}
    assert all(d.evidence and d.evidence.verdict == "counterexample"
               for d in report.diagnostics if d.severity != "info")


@pytest.mark.slow
def test_the_wrong_findings_stay_away_even_unconfirmed(corpus):
    workspace, gate, _, targets, runs = corpus
    shown = LintOptions(show_unconfirmed=True)
    got = {_key(t.name, d) for t in targets
           for d in gate.apply(LintSession(workspace, shown).target(t).found).kept}
    assert not [k for k in got if any(_matches(k, p) for p in NEVER)]
    # every pattern names a line the library has (else the check above could not fail)
    import transformers

    root = Path(transformers.__file__).parent
    for _model, _code, file, text in NEVER:
        assert text in (root / file).read_text(), (file, text)
    # IRV122 never names what the inputs pass; IRV123 never repeats a flag IRV122 names
    passes_mask = {"bert()", "distilbert()", "gpt2()", "llama()", "bart()", "Classifier"}
    for name, run in runs.items():
        for d in run.found:
            assert d.code != "IRV123", (name, d.message)
            if d.code == "IRV122":
                assert "`input_ids`" not in d.message, d.message
                assert name not in passes_mask or "`attention_mask`" not in d.message
    # with --show-unconfirmed the library's own unconfirmed findings are back
    assert len(got) > sum(len(gate.apply(run.found).kept) for run in runs.values())


@pytest.mark.slow
def test_every_tracer_warning_is_reported_at_its_line_or_named(corpus):
    _, gate, _, _, runs = corpus
    for name, run in runs.items():
        shown = {(d.path, d.line) for d in gate.apply(run.found).kept}
        for w in run.trace.warnings:
            if w.category != "TracerWarning" or w.origin is not None:
                continue
            from irviz.paths import display_path

            where = (display_path(w.filename), w.lineno)
            named = any(f"TracerWarning at {where[0]}:{where[1]} " in n for n in run.notes)
            assert where in shown or named, (name, where, w.message[:60])


USER_VIT = '''
import torch
import transformers as T


class ImageEncoder(torch.nn.Module):
    """The user's own module around a library ViT."""

    def __init__(self):
        super().__init__()
        self.vit = T.ViTModel(T.ViTConfig(hidden_size=32, num_hidden_layers=1,
                                          num_attention_heads=2, intermediate_size=64,
                                          image_size=32, patch_size=8)).eval()

    def forward(self, images):
        return self.vit(pixel_values=images).pooler_output  # the call into the library


example_inputs = {"ImageEncoder": lambda: (torch.rand(2, 3, 32, 32),)}
'''


@pytest.mark.slow
def test_the_library_dtype_cast_is_an_error_at_its_if_with_the_users_call(tmp_path):
    """The pattern of several transformers vision models: a cast taken only when the
    input's dtype differs from the weights'. No TracerWarning, in an installed library:
    found by running the trace on a float64 input, shown without --show-unconfirmed."""
    import os
    import subprocess
    import sys

    model = tmp_path / "encoder.py"
    model.write_text(USER_VIT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "irviz", "lint", "encoder.py"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    [i] = [n for n, text in enumerate(lines)
           if "models/vit/modeling_vit.py:" in text and " IRV102 " in text]
    import transformers

    vit_file = Path(transformers.__file__).parent / "models" / "vit" / "modeling_vit.py"
    line = int(lines[i].split("modeling_vit.py:")[1].split(":")[0])
    assert vit_file.read_text().splitlines()[line - 1].strip() == \
        "if pixel_values.dtype != expected_dtype:"
    call = next(n for n, t in enumerate(USER_VIT.splitlines(), 1) if "the call into" in t)
    assert lines[i + 1] == f"    called from encoder.py:{call}"
    assert lines[i + 2].startswith("    counterexample: images float32 -> float64: the trace "
                                   "raises \"RuntimeError: "), lines[i + 2]
    assert "; the model runs" in lines[i + 2]

"""Every model of the real-model corpus captures, as a user would bring it.

The Hugging Face models of ``tests/corpus/transformers_models.py`` are in their default
configuration (``ModelOutput`` results, keyword inputs): each traces, says what was
adapted, keeps its outputs' names, and its trace computes what the model computes.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from irviz.workspace import Workspace  # noqa: E402

CORPUS = Path(__file__).parent / "corpus" / "transformers_models.py"

#: model -> the names of the tensors its trace returns (ModelOutput fields that are tensors)
OUTPUTS = {
    "bert()": ["last_hidden_state", "pooler_output"],
    "distilbert()": ["last_hidden_state"],
    "gpt2()": ["last_hidden_state"],
    "llama()": ["last_hidden_state"],
    "t5()": ["last_hidden_state", "encoder_last_hidden_state"],
    "bart()": ["last_hidden_state", "encoder_last_hidden_state"],
    "vit()": ["last_hidden_state", "pooler_output"],
    "resnet()": ["last_hidden_state", "pooler_output"],
    "convnext()": ["last_hidden_state", "pooler_output"],
    "swin()": ["last_hidden_state", "pooler_output"],
    "wav2vec2()": ["last_hidden_state", "extract_features"],
    "whisper()": ["last_hidden_state", "encoder_last_hidden_state"],
    "clip()": ["logits_per_image", "logits_per_text", "text_embeds", "image_embeds",
               "text_model_output.last_hidden_state", "text_model_output.pooler_output",
               "vision_model_output.last_hidden_state", "vision_model_output.pooler_output"],
    "Classifier": None,  # the user's own module returns a tensor: nothing to adapt
}
#: the models whose output holds a cache object, which the trace leaves out
CACHED = {"gpt2()", "llama()", "t5()", "bart()", "whisper()"}


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    torch.manual_seed(0)
    return Workspace()


@pytest.fixture(scope="module")
def targets(workspace):
    return {t.name: t for t in workspace.targets(str(CORPUS))}


def test_the_corpus_names_every_model(targets):
    assert sorted(targets) == sorted(OUTPUTS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_each_model_traces_with_keyword_inputs_and_says_what_was_adapted(
        workspace, targets, name):
    target = targets[name]
    cap = workspace.capture(target, "trace")
    G = workspace.graph(cap)
    inputs = workspace.inputs_for(target)
    assert inputs.args == () and inputs.kwargs  # given by keyword, as users call them
    assert [G.nodes[n]["label"] for n in G.graph["inputs"]] == list(inputs.kwargs)
    notes = " | ".join(cap.notes)
    assert "keyword inputs " + ", ".join(inputs.kwargs) in notes
    expected = OUTPUTS[name]
    if expected is None:
        assert "output_names" not in G.nodes["out"] and "traced as its tensors" not in notes
    else:
        assert G.nodes["out"]["output_names"] == expected
        assert "output is traced as its tensors: " + ", ".join(expected) in notes
    assert ("left out (not tensors): cache" in notes) == (name in CACHED), notes
    # the trace computes what the Python model computes, leaf by leaf
    with torch.no_grad():
        got = cap.run()
        want = cap.run_python(inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)

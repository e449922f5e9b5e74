"""A corpus of real Hugging Face models, built the way the library's docs build them.

Every factory makes a model in its *default* configuration (``return_dict=True``,
``torchscript=False``: the ``ModelOutput`` a user gets) from a tiny config with random
weights; nothing is downloaded. Inputs are given by keyword, as users call these models.
One of each kind: encoders, decoders, encoder-decoders, vision, audio, a dual-tower
model, and a user's own module wrapping a library model.
"""
import torch
import transformers as T

V = 100  # vocabulary size of the text models


def _ids(length: int = 16) -> torch.Tensor:
    return torch.randint(0, V, (2, length), generator=torch.Generator().manual_seed(length))


def _mask(length: int = 16) -> torch.Tensor:
    return torch.ones(2, length, dtype=torch.long)


def _pixels() -> torch.Tensor:
    return torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))


def bert():
    return T.BertModel(T.BertConfig(
        vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64)).eval()


def distilbert():
    return T.DistilBertModel(T.DistilBertConfig(
        vocab_size=V, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
        max_position_embeddings=64)).eval()


def gpt2():
    return T.GPT2Model(T.GPT2Config(vocab_size=V, n_embd=32, n_layer=2, n_head=2,
                                    n_positions=64, bos_token_id=0, eos_token_id=0)).eval()


def llama():
    return T.LlamaModel(T.LlamaConfig(
        vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, intermediate_size=64, max_position_embeddings=64)).eval()


def t5():
    return T.T5Model(T.T5Config(vocab_size=V, d_model=32, d_kv=16, d_ff=64, num_layers=2,
                                num_heads=2, decoder_start_token_id=0)).eval()


def bart():
    return T.BartModel(T.BartConfig(
        vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)).eval()


def vit():
    return T.ViTModel(T.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, image_size=32, patch_size=8)).eval()


def resnet():
    return T.ResNetModel(T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32],
                                        depths=[1, 1], layer_type="basic")).eval()


def convnext():
    return T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1],
                                            num_stages=2)).eval()


def swin():
    return T.SwinModel(T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                    num_heads=[2, 2], window_size=4)).eval()


def wav2vec2():
    return T.Wav2Vec2Model(T.Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)).eval()


def whisper():
    return T.WhisperModel(T.WhisperConfig(
        vocab_size=V, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=16, max_target_positions=16,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        suppress_tokens=None, begin_suppress_tokens=None)).eval()


def clip():
    return T.CLIPModel(T.CLIPConfig(
        text_config=dict(vocab_size=V, hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=32),
        vision_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8),
        projection_dim=16)).eval()


class Classifier(torch.nn.Module):
    """The user's own model around a library encoder: a head on BERT's pooled output."""

    def __init__(self):
        super().__init__()
        self.encoder = bert()
        self.head = torch.nn.Linear(32, 3)

    def forward(self, input_ids, attention_mask):
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask)
        return self.head(out.pooler_output)


_TEXT = lambda: dict(input_ids=_ids(), attention_mask=_mask())  # noqa: E731
_IMAGE = lambda: dict(pixel_values=_pixels())  # noqa: E731

example_inputs = {
    "bert()": _TEXT, "distilbert()": _TEXT, "gpt2()": _TEXT, "llama()": _TEXT,
    "t5()": lambda: dict(input_ids=_ids(), decoder_input_ids=_ids(8)),
    "bart()": _TEXT,
    "vit()": _IMAGE, "resnet()": _IMAGE, "convnext()": _IMAGE, "swin()": _IMAGE,
    "wav2vec2()": lambda: dict(input_values=torch.rand(
        2, 800, generator=torch.Generator().manual_seed(1))),
    "whisper()": lambda: dict(input_features=torch.rand(2, 8, 32),
                              decoder_input_ids=_ids(4)),
    "clip()": lambda: dict(input_ids=_ids(8), pixel_values=_pixels()),
    "Classifier": _TEXT,
}

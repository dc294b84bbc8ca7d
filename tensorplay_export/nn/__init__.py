"""tensorplay_export.nn: a torch-like module system, layers and functional ops over numpy arrays.

Model code written against this package is what `tensorplay_export.export` captures:
`Module.__call__` goes through the capture hook, parameters and buffers live in the
dicts capture swaps traced arrays into, and `functional` is plain numpy calls.
"""

from tensorplay_export.nn import functional, init
from tensorplay_export.nn.attention import MultiheadAttention
from tensorplay_export.nn.containers import ModuleDict, ModuleList, Sequential
from tensorplay_export.nn.conv import AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, MaxPool2d
from tensorplay_export.nn.init import manual_seed
from tensorplay_export.nn.layers import (GELU, Dropout, Embedding, Flatten, Identity, LayerNorm, Linear,
                                         LogSoftmax, ReLU, RMSNorm, Sigmoid, SiLU, Softmax, Tanh)
from tensorplay_export.nn.module import IncompatibleKeys, Module, Parameter

__all__ = [
    "Module", "Parameter", "IncompatibleKeys", "functional", "init", "manual_seed",
    "Linear", "Embedding", "LayerNorm", "RMSNorm", "Dropout", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh",
    "Softmax", "LogSoftmax", "Flatten", "Identity", "MultiheadAttention", "Conv1d", "Conv2d",
    "BatchNorm1d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "Sequential", "ModuleList", "ModuleDict",
]

from tensorplay_export.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d  # noqa: E402
from tensorplay_export.nn.norms import GroupNorm  # noqa: E402
from tensorplay_export.nn.recurrent import GRUCell, LSTMCell, RNNCell  # noqa: E402
from tensorplay_export.nn.resize import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: E402
                                         AdaptiveMaxPool2d, Upsample, UpsamplingNearest2d)

__all__ += [
    "Upsample", "UpsamplingNearest2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "ConvTranspose1d", "ConvTranspose2d", "GroupNorm", "RNNCell", "GRUCell", "LSTMCell",
]

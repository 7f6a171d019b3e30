#!/usr/bin/env python3
"""Write a llama-architecture GGUF with Llama-3-8B-like shapes and random F16
weights, for a decode-speed benchmark that can be compared across machines.

Shapes: 32 layers, embedding 4096, FFN 14336, 32 heads, 8 KV heads; the llama
SPM vocabulary from llama.cpp's models/ggml-vocab-llama-spm.gguf (32000
tokens). The weights are noise: speed depends on shapes and types, not values.
The trained context written into the header is 8192, or CONTEXT (e.g. 32768:
the llama_server role then lets each slot grow up to it); the weights are the same.
Usage: make_bench_model.py LLAMA_CPP_SRC OUT.gguf [CONTEXT]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

LAYERS, EMBD, FFN, HEADS, KV_HEADS = 32, 4096, 14336, 32, 8


def start_model(src: Path, out: Path, architecture: str, name: str):
    """-> (the gguf-py of the llama.cpp tree at src, a writer for out with the
    llama SPM vocabulary's tokenizer.* keys, the vocabulary size)."""
    sys.path.insert(0, str(src / "gguf-py"))
    import gguf  # the gguf-py of the same llama.cpp tree

    vocab = gguf.GGUFReader(src / "models" / "ggml-vocab-llama-spm.gguf")
    writer = gguf.GGUFWriter(out, architecture)
    writer.add_name(name)
    for field in vocab.fields.values():
        if field.name.startswith("tokenizer."):
            vtype = field.types[0]
            if vtype == gguf.GGUFValueType.ARRAY:
                writer.add_key_value(field.name, field.contents(), vtype, sub_type=field.types[-1])
            else:
                writer.add_key_value(field.name, field.contents(), vtype)
    return gguf, writer, len(vocab.fields["tokenizer.ggml.tokens"].data)


def finish_model(writer) -> None:
    """Write the header, the metadata and the tensors, and close the file."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(src: Path, out: Path, context: int = 8192) -> None:
    gguf, writer, n_vocab = start_model(src, out, "llama", "bench-llama-8b-shapes-random")
    writer.add_block_count(LAYERS)
    writer.add_context_length(context)
    writer.add_embedding_length(EMBD)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(EMBD // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(500000.0)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    # One random block, reused: random generation of 8e9 values would dominate.
    noise = (np.random.default_rng(0).standard_normal(1 << 26, dtype=np.float32) * 0.02).astype(np.float16)

    def weight(*shape: int) -> np.ndarray:
        return np.resize(noise, shape)

    def norm(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    writer.add_tensor("token_embd.weight", weight(n_vocab, EMBD))
    for i in range(LAYERS):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", norm(EMBD))
        writer.add_tensor(f"blk.{i}.attn_q.weight", weight(EMBD, EMBD))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weight(EMBD // HEADS * KV_HEADS, EMBD))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weight(EMBD // HEADS * KV_HEADS, EMBD))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weight(EMBD, EMBD))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", norm(EMBD))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(FFN, EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(FFN, EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(EMBD, FFN))
    writer.add_tensor("output_norm.weight", norm(EMBD))
    writer.add_tensor("output.weight", weight(n_vocab, EMBD))
    finish_model(writer)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 8192)

"""Local pyairports package for vLLM 0.5.x (see airports.py)."""

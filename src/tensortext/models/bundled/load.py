"""Loading the bundled translator from the package data, its weights checked by sha256."""

from __future__ import annotations

import hashlib
import io
import json
from importlib import resources
from typing import Any

import torch

from tensortext.models.bundled.config import TranslatorConfig
from tensortext.models.bundled.model import BundledTranslator

__all__ = ["load_bundled_translator", "sha256"]

MODEL_DIR = "data/model"
EVIDENCE_MODEL_DIR = "data/evidence_model"


def sha256(data: bytes) -> str:
    """Hex sha256 of ``data``, as ``config.json`` records it under ``weights_sha256``."""
    return hashlib.sha256(data).hexdigest()


def _read(directory: str, name: str) -> bytes:
    return resources.files("tensortext").joinpath(f"{directory}/{name}").read_bytes()


def load_bundled_translator(
    device: torch.device | str | None = None, *, evidence_model: bool = False
) -> BundledTranslator:
    """Loads the trained model from the package data (``tensortext/data/model``).

    The weights are stored in float16 to keep the package small and come back as float32. Their
    sha256 is checked against ``config.json``.

    Args:
        device: where to put the model (CPU by default).
        evidence_model: Load the weaker second system instead (``data/evidence_model``: another
            seed, half the training), whose n-best lists serve as LMBR evidence in the demo.

    Returns:
        The translator in eval mode.

    Raises:
        ValueError: the weights do not match the checksum in ``config.json``.
    """
    directory = EVIDENCE_MODEL_DIR if evidence_model else MODEL_DIR
    config_json: dict[str, Any] = json.loads(_read(directory, "config.json"))
    vocab_json: dict[str, list[str]] = json.loads(_read(directory, "vocab.json"))
    weights = _read(directory, "weights.pt")
    digest = sha256(weights)
    if digest != config_json["weights_sha256"]:
        raise ValueError(
            f"{directory}/weights.pt has sha256 {digest} but config.json expects "
            f"{config_json['weights_sha256']}; reinstall tensortext or rerun "
            "scripts/train_bundled_model.py"
        )
    config = TranslatorConfig(**config_json["model"])
    model = BundledTranslator(config, vocab_json["source"], vocab_json["target"])
    state_dict = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    model.load_state_dict({name: tensor.float() for name, tensor in state_dict.items()})
    return model.to(device or "cpu").eval()

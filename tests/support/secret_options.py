"""The CLI options that carry a secret, in one list (issue 27): tests/test_secret_leaks.py gives each
of them a canary and checks that it reaches no output. An option added later that takes a secret
(a key file, a token) gets an entry here and is covered at once.

Each entry turns a canary into the command-line arguments that give it, and names the texts that
must never be seen (the canary itself, or the part of a key file that is secret).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SecretOption:
    """``give(canary, folder)`` -> (arguments, texts that must not appear in any output)."""

    name: str
    give: Callable[[str, Path], tuple[list[str], list[str]]]


def private_file(path: Path, text: str) -> Path:
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def _storage_options(canary: str, folder: Path) -> tuple[list[str], list[str]]:
    """s3fs's access key and secret (a local store accepts any)."""
    return ["--storage-option", f"key={canary}", "--storage-option", f"secret={canary}"], [canary]


def _spark_secret(canary: str, folder: Path) -> tuple[list[str], list[str]]:
    return ["--spark-secret-file", str(private_file(folder / "spark.secret", canary))], [canary]


def _rsm_key(canary: str, folder: Path) -> tuple[list[str], list[str]]:
    """A fresh RSA private key (PEM): a key file must hold a real key, so the texts to look for
    are the lines of its body (the canary plays no part). Needs the ``cryptography`` package."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    # Lines long enough that no output holds one by chance.
    body = [line for line in pem.decode().splitlines() if not line.startswith("-----") and len(line) >= 16]
    return ["--rsm-key-file", str(private_file(folder / "rsm-key.pem", pem.decode().strip()))], body


# Entries whose option a command does not have are left out for it (--rsm-key-file comes with
# the tiered-storage work).
SECRET_OPTIONS: list[SecretOption] = [
    SecretOption("--storage-option", _storage_options),
    SecretOption("--spark-secret-file", _spark_secret),
    SecretOption("--rsm-key-file", _rsm_key),
]


def secret_arguments(canary: str, folder: Path, accepted: set[str]) -> tuple[list[str], list[str]]:
    """The arguments of every secret option a command ``accepted`` (its option names), and the
    texts to look for."""
    arguments: list[str] = []
    texts: set[str] = set()
    for option in SECRET_OPTIONS:
        if option.name in accepted:
            given, secret = option.give(canary, folder)
            arguments += given
            texts.update(secret)
    return arguments, sorted(texts)

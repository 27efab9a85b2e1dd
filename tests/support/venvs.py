"""Python environments that lack something, for executors whose workers run them: a virtual
environment of this Python that sees this environment's packages (PySpark included) except the
ones named, as a cluster node whose ``python3`` was not set up like the driver's."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def python_lacking(root: Path, lacking: str) -> Path:
    """A virtual environment under ``root`` whose Python cannot import the top-level module
    ``lacking`` (``kafka_audit``, ``crc32c``, ...) but imports every other package of this one and,
    unless it is the one lacking, kafka_audit from this repository. Returns its ``python``."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    # The packages are linked one by one into a folder of their own, all but the lacking one; a
    # folder named in a .pth file is not a site folder, so this one's .pth files (the editable
    # kafka_audit install among them) are not run there.
    packages = root / "packages"
    packages.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.split(".")[0].split("-")[0] != lacking and entry.suffix != ".pth":
            (packages / entry.name).symlink_to(entry)
    lines = [str(packages)] + ([] if lacking == "kafka_audit" else [str(REPO)])
    Path(site, "packages.pth").write_text("\n".join(lines) + "\n")
    check = subprocess.run([str(python), "-c", f"import pyspark, {lacking}"], cwd=root, capture_output=True, text=True, timeout=60, check=False)
    assert f"No module named '{lacking}'" in check.stderr, check.stderr
    return python

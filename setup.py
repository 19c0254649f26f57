"""Build hook (the metadata is in pyproject.toml): the wheel carries the files outside the
packages that an installed repro reads, the hardware profiles and the paper templates
(repro/core/config.py SHIPPED_FILES), copied into repro/_data/ where `project_file` finds them.

A build from a tree without them (the harness image's wheel is built from harness/ and
pyproject.toml alone, without this file) ships nothing extra; an editable install reads them in
place.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from repro.core.config import SHIPPED_FILES  # noqa: E402 (the list is named once, where it is read)


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "repro" / "_data"
        for relative in SHIPPED_FILES:
            source = ROOT / relative
            if source.is_dir():
                shutil.copytree(source, data / relative, dirs_exist_ok=True)
            elif source.is_file():
                (data / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, data / relative)


setup(cmdclass={"build_py": BuildWithData})

"""Only what pyproject.toml cannot say: the repository's top-level data/ folder ships in the wheel,
and the wheel records the commit it was built from.

data/ stays at the top of the repository (DESIGN.md's layout; dvc.yaml's deps name its files and
its README gives their sources and licences), and a built wheel carries it as the package
`audit.data`, so an installed audit reads its items, personas, IAT stimuli, DIF bank, lexicon and
judge gold set from any folder (audit.data_files resolves them). Each sub-folder is listed as a
package so setuptools copies its files without a "package absent from configuration" warning.

A wheel built from a git checkout carries audit/BUILD_COMMIT ("COMMIT DIRTY"), which a run of the
installed wheel records as audit.commit (audit.tracking.mlflow.source_state): the version alone
names no code until releases are tagged, and the folder a run is made in is not audit's checkout.
"""

import subprocess
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


# The same git reading as audit.tracking.mlflow (_git, checkout_state), written again on purpose:
# setup.py runs in the build environment, before audit and its dependencies can be imported.
def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


class BuildWithCommit(build_py):
    def run(self) -> None:
        # Read before building: the build folder is not the source's change.
        commit = _git("rev-parse", "HEAD")
        status = _git("status", "--porcelain", "--", ":/", ":(exclude,top)dvc.lock")
        super().run()
        if commit and not self.editable_mode:  # an editable install reads its checkout itself
            dirty = "unknown" if status is None else str(bool(status)).lower()
            target = Path(self.build_lib) / "audit" / "BUILD_COMMIT"
            target.write_text(f"{commit} {dirty}\n", encoding="utf-8")


DATA = Path("data")
DATA_PACKAGES = ["audit.data", *sorted(
    "audit.data." + ".".join(folder.relative_to(DATA).parts)
    for folder in DATA.rglob("*") if folder.is_dir())]

setup(
    cmdclass={"build_py": BuildWithCommit},
    package_dir={"": "src", "audit.data": str(DATA)},
    packages=[*find_namespace_packages("src", exclude=["*__pycache__*"]), *DATA_PACKAGES],
    package_data={
        "audit": ["py.typed", "conf/*.yaml", "conf/*/*.yaml", "conf/*/*/*.yaml",
                  "methods/rasch/report/templates/*.j2"],
        **{package: ["*"] for package in DATA_PACKAGES},
    },
)

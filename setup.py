"""Only what pyproject.toml cannot say: the repository's top-level data/ folder ships in the wheel.

data/ stays at the top of the repository (DESIGN.md's layout; dvc.yaml's deps name its files and
its README gives their sources and licences), and a built wheel carries it as the package
`audit.data`, so an installed audit reads its items, personas, IAT stimuli, DIF bank, lexicon and
judge gold set from any folder (audit.data_files resolves them). Each sub-folder is listed as a
package so setuptools copies its files without a "package absent from configuration" warning.
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup

DATA = Path("data")
DATA_PACKAGES = ["audit.data", *sorted(
    "audit.data." + ".".join(folder.relative_to(DATA).parts)
    for folder in DATA.rglob("*") if folder.is_dir())]

setup(
    package_dir={"": "src", "audit.data": str(DATA)},
    packages=[*find_namespace_packages("src", exclude=["*__pycache__*"]), *DATA_PACKAGES],
    package_data={
        "audit": ["py.typed", "conf/*.yaml", "conf/*/*.yaml", "conf/*/*/*.yaml",
                  "methods/rasch/report/templates/*.j2"],
        **{package: ["*"] for package in DATA_PACKAGES},
    },
)

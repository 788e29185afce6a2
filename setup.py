"""Extension build only; metadata lives in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILE_ARGS = ["-O3", "-fno-strict-aliasing"]
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}

extensions = [
    Extension(f"kalah_core.{name}", [f"kalah_core/{name}.pyx"], extra_compile_args=COMPILE_ARGS)
    for name in ("_board", "_search")
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES))

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

# The endgame database builder runs on every core with OpenMP (gcc's libgomp).
OPENMP = {"_egdb": ["-fopenmp"]}

extensions = [
    Extension(
        f"kalah_core.{name}",
        [f"kalah_core/{name}.pyx"],
        extra_compile_args=COMPILE_ARGS + OPENMP.get(name, []),
        extra_link_args=OPENMP.get(name, []),
    )
    for name in ("_board", "_search", "_egdb")
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES))

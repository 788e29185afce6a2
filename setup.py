"""Extension build only; metadata lives in pyproject.toml.

``KALAH_DEBUG=1`` in the environment builds the search with its debug checks (the return
contract of the exact search checked against minimax on small subtrees; see _search.pyx).
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KALAH_DEBUG", "") not in ("", "0")
COMPILE_ARGS = ["-O3", "-fno-strict-aliasing"]
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}

# The endgame database builder and the parallel search run on every core with OpenMP
# (gcc's libgomp).
OPENMP = {"_egdb": ["-fopenmp"], "_search": ["-fopenmp"]}

extensions = [
    Extension(
        f"kalah_core.{name}",
        [f"kalah_core/{name}.pyx"],
        extra_compile_args=COMPILE_ARGS + OPENMP.get(name, []),
        extra_link_args=OPENMP.get(name, []),
        define_macros=[("KALAH_DEBUG", "1")] if DEBUG else [],
    )
    for name in ("_board", "_bigboard", "_table", "_search", "_search_big", "_egdb")
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES))

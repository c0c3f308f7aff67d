"""Build of rpp's compiled data core (rpp_cli/core/_kernel.c); everything else is in
pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("rpp_cli.core._kernel", ["rpp_cli/core/_kernel.c"],
                             extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                                 "-Wno-missing-field-initializers"])])

"""Build the one C extension; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tokenmill._kernels", ["src/tokenmill/_kernels.c"], extra_compile_args=["-O2"])])

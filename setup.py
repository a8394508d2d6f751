"""Kept as the owner asked; the distribution's metadata lives in pyproject.toml."""

from setuptools import setup

setup()

"""The one thing pyproject.toml cannot say without experimental settings: the optional C build of
the record screen (kafka_audit/formats/_record_screen.c). ``optional=True``: without a compiler the
install still succeeds and the pure-Python screen runs."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kafka_audit.formats._record_screen",
            sources=["kafka_audit/formats/_record_screen.c"],
            optional=True,
        )
    ]
)

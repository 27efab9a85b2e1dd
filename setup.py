"""The one thing pyproject.toml cannot say without experimental settings: the optional C builds of
the record screen (kafka_audit/formats/_record_screen.c) and of dump's record lines
(kafka_audit/_record_text.c). ``optional=True``: without a compiler the install still succeeds and
the pure-Python code runs."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kafka_audit.formats._record_screen",
            sources=["kafka_audit/formats/_record_screen.c"],
            optional=True,
        ),
        Extension("kafka_audit._record_text", sources=["kafka_audit/_record_text.c"], optional=True),
    ]
)

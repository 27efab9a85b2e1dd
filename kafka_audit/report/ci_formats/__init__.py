"""The CI formats of ``scan`` (SPEC section 3): SARIF 2.1.0 (:mod:`.sarif`), JUnit XML
(:mod:`.junit`), GitHub Actions workflow commands and step summary (:mod:`.github`) and GitLab Code
Quality JSON (:mod:`.gitlab`). Each shows the same findings as ``--format json``; the exit code
is the CLI's, the same for every format."""

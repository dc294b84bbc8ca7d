"""The face users meet: draft_export, failure reports, contracts, the CLI and the testing helper."""

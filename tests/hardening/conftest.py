from tests.api.conftest import golden_set, manager, run, token, uploaded_run, version  # noqa: F401  (the API tests' set, run and tokens)

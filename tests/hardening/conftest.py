from tests.api.conftest import golden_set, manager, token  # noqa: F401  (the API tests' set and tokens)

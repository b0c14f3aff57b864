"""The API's endpoints, one class per operation, grouped by what they read or write."""

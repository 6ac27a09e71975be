"""The API's routes under /api/v1, one module per area of the contract."""

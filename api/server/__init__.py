"""The HTTP server: the Starlette app, its handlers, the OpenAPI document, metrics, serving."""

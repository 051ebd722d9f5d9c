"""serve's API contract: the msgspec Structs of every request and response (`wire`, `import_wire`), the OpenAPI
document built from them (`openapi`, `openapi.json`), and the client of serve the CLI and the shell use (`client`).
"""

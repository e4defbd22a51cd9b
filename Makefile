# The two commands of the README: `make serve` and `make test`. Both install what is missing
# first (once): the Debian packages OCR needs (scripts/install-system-packages.sh) and the local
# embedding model (scripts/install-model.sh). `make test` also installs what its clients need:
# the MCP Python SDK (scripts/install-mcp-client.sh) and, for the dashboard's end-to-end test,
# Debian's Chromium, Node.js and playwright-core (scripts/install-e2e.sh), and the API contract
# tools, schemathesis and openapi-python-client (scripts/install-api-tools.sh); then it runs
# every test: cargo's (unit, integration, MCP client), the dashboard's in headless Chromium, and
# the API contract (tests/contract/run.sh: schemathesis against the OpenAPI document).

.PHONY: serve test model packages mcp-client e2e-deps api-tools bench e2e contract

packages:
	scripts/install-system-packages.sh

model:
	scripts/install-model.sh

mcp-client: packages
	scripts/install-mcp-client.sh

serve: packages model
	cargo run --release -- serve

e2e-deps: packages
	scripts/install-e2e.sh

api-tools: packages
	scripts/install-api-tools.sh

test: packages model mcp-client e2e-deps api-tools
	cargo test --workspace
	tests/e2e/run.sh
	tests/contract/run.sh

bench:
	cargo bench --bench http

# The API contract alone (make test runs it too): schemathesis, with a key and with a session
# cookie, against a fresh server on SQLite, then a generated Python client's quickstart.
contract: packages model api-tools
	tests/contract/run.sh

# The dashboard's end-to-end test alone (make test runs it too): a fresh server on SQLite, one
# headless Chromium, screenshots in tests/e2e/artifacts/.
e2e: packages model e2e-deps
	tests/e2e/run.sh
